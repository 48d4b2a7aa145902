-- Bearer tokens of the HTTP API (`/api/v1/*`). Only the SHA-256 of a token is
-- stored; the token itself is printed once by `faultline token create`.
-- Roles: ingest (submit analyses), reviewer (read analyses, review queue),
-- admin (everything). A revoked token stays for the record but no longer works.
CREATE TABLE api_tokens (
    id            uuid PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    role          text NOT NULL CHECK (role IN ('ingest', 'reviewer', 'admin')),
    token_sha256  text NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
