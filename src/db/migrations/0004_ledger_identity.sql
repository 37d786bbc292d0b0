-- The ledger's identity, also stamped on UBSCore's WAL: a start whose two stores name
-- different ledgers (or one of them none, while the other holds state) is refused
-- (src/ownership/ledger-identity.ts). One row at most.

CREATE TABLE ledger_identity (
  singleton  BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  ledger_id  UUID NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
