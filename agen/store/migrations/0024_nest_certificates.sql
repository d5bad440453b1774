-- Nest client certificates (mTLS, seed 000 §10): a Nest enrolled with a TLS Hub authenticates with a
-- certificate from the Hub CA; its fingerprint (sha256 of the DER) names the Nest. A renewed certificate
-- is pending (first_used_ms NULL) until the Nest first uses it, which ends the one before it.
CREATE TABLE nest_certs (
    fingerprint   TEXT PRIMARY KEY,
    nest_id       TEXT NOT NULL,
    serial        TEXT NOT NULL,
    not_after_ms  INTEGER NOT NULL,
    created_ms    INTEGER NOT NULL,
    first_used_ms INTEGER,
    ended_ms      INTEGER,
    end_reason    TEXT
);
CREATE INDEX nest_certs_by_nest ON nest_certs (nest_id);
