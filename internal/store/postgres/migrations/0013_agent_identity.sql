-- Who may get a deploy agent boot's work (service.AgentHeartbeat). The
-- identities (NetbootID forms: the system UUID in the byte orders BMCs
-- use, NIC MACs) the agent must present in its first report before it is
-- handed any command, space-framed like netboot_ids ('' when the node had
-- none known when it was booted); the source address of the first report
-- that passed, to which the session is then bound ('' before it); and the
-- last reason a report was refused, told once in an event and named when
-- the work gives up waiting.
ALTER TABLE agent_sessions ADD COLUMN identity_ids text NOT NULL DEFAULT '';
ALTER TABLE agent_sessions ADD COLUMN agent_addr text NOT NULL DEFAULT '';
ALTER TABLE agent_sessions ADD COLUMN refused text NOT NULL DEFAULT '';
