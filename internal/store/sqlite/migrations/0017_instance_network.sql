-- An instance's network configuration (baremetal.Network as JSON; '' for
-- none), written to its config drive as network_data.json.
ALTER TABLE instances ADD COLUMN network text NOT NULL DEFAULT '';
