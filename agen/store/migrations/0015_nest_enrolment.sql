-- Join tokens (tokens.kind = 'join') carry the labels the Nest they enrol gets; a Nest's own
-- credential is a tokens row of kind 'nest' whose subject is the Nest's id.
ALTER TABLE tokens ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
