"""The Hub's RPC handlers, one module per concept: thin functions that check the caller's scope and
namespace, then call the queue, the fleet or the observation code. The API registry names each one."""
