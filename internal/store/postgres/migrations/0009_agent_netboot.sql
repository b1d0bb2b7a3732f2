-- Network boots of the deploy agent (nodes without virtual media): the
-- identities the booting machine may present to the controller's iPXE
-- script endpoint (its system UUID in the byte orders BMCs use, its NICs'
-- MACs), space-separated and space-framed (" a b "), so one LIKE finds the
-- session. The table holds only the nodes booting the agent right now.
ALTER TABLE agent_sessions ADD COLUMN netboot_ids text NOT NULL DEFAULT '';
