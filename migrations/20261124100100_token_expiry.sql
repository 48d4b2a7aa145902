-- API tokens can expire (issue 14, finding 12): `faultline token create
-- --expires-in 30d`. NULL means the token does not expire; an expired token
-- is refused like a revoked one.
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
