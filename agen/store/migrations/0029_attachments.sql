-- Files given with a task's input (issue #35): their references ([{id, name, media_type, size}], the
-- bytes are artifacts of the namespace, agen.domain.attachments) on the task, for the run it leases
-- to, and on the run's first message, so a resumed run and a later turn of the conversation send
-- the model the same files.
ALTER TABLE tasks ADD COLUMN attachments TEXT;
ALTER TABLE messages ADD COLUMN attachments TEXT;
