-- Failed sign-ins in a row per account and client address (an IPv6 client: its /64). A lock-out
-- keeps out only the address that failed: anyone could once keep an account's owner out by failing
-- on purpose from anywhere. A row not touched for the lock-out's length is forgotten.
CREATE TABLE console_signin_failure (
  account_id    VARCHAR(40) NOT NULL REFERENCES account (id) ON DELETE CASCADE,
  client        VARCHAR(64) NOT NULL,
  failures      INT NOT NULL,
  locked_until  TIMESTAMP WITH TIME ZONE,
  updated_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  PRIMARY KEY (account_id, client)
);

-- The lock-out per account it replaces.
ALTER TABLE account DROP COLUMN failed_signins;
ALTER TABLE account DROP COLUMN locked_until;
