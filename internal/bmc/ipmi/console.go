package ipmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/transport"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

var _ bmc.ConsoleOpener = (*Client)(nil)

// solInstance is the SOL payload instance every BMC serves its console on.
const solInstance = 1

// Completion codes of Activate Payload (IPMI v2.0 §24.1).
const (
	ccPayloadAlreadyActive = 0x80 // on another session
	ccPayloadDisabled      = 0x81 // SOL is not enabled on the BMC
	ccPayloadLimitReached  = 0x82
)

// solPoll is how often the console polls the BMC for output. The
// console's output arrives unsolicited too; polling only bounds how late
// an acknowledgement is, so BMCs keep sending.
const solPoll = 100 * time.Millisecond

// OpenConsole activates the SOL payload on a session of its own (the
// shared session serves power and boot calls, which must not wait behind
// a console), taking it over from any other session that holds it.
func (c *Client) OpenConsole(ctx context.Context) (bmc.Console, error) {
	const op = "open console"
	// The session outlives this call and keeps the per-exchange timeout
	// it was opened with (perTry): give it the longest, so that a busy
	// BMC (or host) does not end a console that streams for minutes.
	cctx, cancel := context.WithTimeout(ctx, max(c.o.opts.Timeout, 5*time.Second))
	defer cancel()
	if c.o.isClosed() {
		return nil, bmc.Wrap(bmc.KindUnreachable, op, errClosed)
	}
	s, err := c.o.connect(cctx, c.t, c.cr)
	if err != nil {
		return nil, withOp(op, err)
	}
	req := &transport.ActivatePayloadRequest{
		PayloadType:     types.PayloadTypeSOL,
		PayloadInstance: solInstance,
		// As ipmitool asks: the console's keystrokes may be passwords.
		EnableEncryption:     s.suite != 0,
		EnableAuthentication: s.suite != 0,
	}
	_, err = s.cli.ActivatePayload(cctx, req)
	if code, ok := completionCode(err); ok && code == ccPayloadAlreadyActive {
		// A console left open by another client (or by a controller that
		// died): end it and take the console.
		c.o.log.LogAttrs(ctx, slog.LevelInfo, "ipmi console held by another session; taking it over", slog.String("bmc", c.t.key()))
		_, _ = s.cli.DeactivatePayload(cctx, &transport.DeactivatePayloadRequest{PayloadType: types.PayloadTypeSOL, PayloadInstance: solInstance})
		_, err = s.cli.ActivatePayload(cctx, req)
	}
	if err != nil {
		defer s.close(closeTimeout)
		kind := classify(err)
		if code, ok := completionCode(err); ok {
			switch code {
			case ccPayloadDisabled:
				return nil, bmc.Errorf(bmc.KindUnsupported, op, "%s: Serial-over-LAN is disabled on the BMC (enable it: ipmitool sol set enabled true)", c.t.key())
			case ccPayloadAlreadyActive, ccPayloadLimitReached:
				kind = bmc.KindBMCError
			}
		}
		return nil, bmc.Wrap(kind, op, describe(fmt.Sprintf("%s: activate Serial-over-LAN", c.t.key()), err, c.cr.pass))
	}

	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	con := &solConsole{key: c.t.key(), pass: c.cr.pass, stop: stop, in: inW, out: outR, done: make(chan struct{})}
	go func() {
		defer close(con.done)
		err := s.cli.SOLStream(sctx, inR, outW, &ipmiSOLOptions)
		if err == nil || errors.Is(err, context.Canceled) && sctx.Err() != nil {
			err = io.EOF
		} else {
			err = bmc.Wrap(classify(err), "console", describe(c.t.key()+": Serial-over-LAN", err, c.cr.pass))
		}
		_ = inR.CloseWithError(err)
		_ = outW.CloseWithError(err)
		dctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_, _ = s.cli.DeactivatePayload(dctx, &transport.DeactivatePayloadRequest{PayloadType: types.PayloadTypeSOL, PayloadInstance: solInstance})
		s.close(closeTimeout)
	}()
	return con, nil
}

// solConsole is an active SOL payload, streamed by go-ipmi's SOLStream.
type solConsole struct {
	key, pass string
	stop      context.CancelFunc
	in        *io.PipeWriter
	out       *io.PipeReader
	done      chan struct{}
	closeOnce sync.Once
}

func (c *solConsole) Read(p []byte) (int, error) { return c.out.Read(p) }

func (c *solConsole) Write(p []byte) (int, error) { return c.in.Write(p) }

// Close deactivates the payload and ends the session, waiting at most a
// few seconds for a BMC that no longer answers.
func (c *solConsole) Close() error {
	c.closeOnce.Do(func() {
		c.stop()
		_ = c.in.Close()
		_ = c.out.Close()
		select {
		case <-c.done:
		case <-time.After(3 * closeTimeout):
		}
	})
	return nil
}

var ipmiSOLOptions = ipmiclient.SOLStreamOptions{PollInterval: solPoll}
