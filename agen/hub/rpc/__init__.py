"""The Hub's RPC handlers, one module per concept: thin functions that check the caller's scope and
namespace, then call the queue, the fleet or the reads in ``observe``. The API registry names each one,
and every handler lives here (the top layer of the Hub: nothing below imports an rpc module)."""
