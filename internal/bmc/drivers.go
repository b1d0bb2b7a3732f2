package bmc

import (
	"context"
	"fmt"
)

// Drivers dispatches Open to the Opener registered for an endpoint's
// driver name ("redfish", "ipmi").
type Drivers map[string]Opener

// Open implements Opener.
func (d Drivers) Open(ctx context.Context, ep Endpoint) (Client, error) {
	o, ok := d[ep.Driver]
	if !ok {
		return nil, Errorf(KindUnsupported, "open", "no driver %q in this controller", ep.Driver)
	}
	c, err := o.Open(ctx, ep)
	if err != nil {
		// The address is left out: the driver's error already says what
		// failed, and an address is operator input that could hold secrets.
		return nil, fmt.Errorf("open %s BMC: %w", ep.Driver, err)
	}
	return c, nil
}
