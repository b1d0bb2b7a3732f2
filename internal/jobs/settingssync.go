package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// SettingsSyncArgs is the periodic pass that reads back the hardware
// settings of the nodes that declare some (Config.SettingsSyncInterval),
// so that a change made at the console or by another tool shows as drift
// in the next plan. It queues a ReadSettingsArgs per node due.
type SettingsSyncArgs struct{}

func (SettingsSyncArgs) Kind() string { return "settings_sync" }

func (SettingsSyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, Queue: QueuePowerSync}
}

// ReadSettingsArgs reads one node's hardware settings back from its BMC.
// It only observes: it takes no mutating slot, runs in maintenance too,
// and leaves BMC failures to the power sync's fault accounting (three
// tries, then the next pass).
type ReadSettingsArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (ReadSettingsArgs) Kind() string { return "read_settings" }

func (ReadSettingsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: uniquePerNode}
}

type settingsSyncWorker struct {
	river.WorkerDefaults[SettingsSyncArgs]
	r *Runner
}

// Work queues a read of every node that declares settings, is not having
// them applied (configuring reads them itself), and was last read an
// interval ago or more. It reads the node list a page at a time.
func (w *settingsSyncWorker) Work(ctx context.Context, _ *river.Job[SettingsSyncArgs]) error {
	iv := w.r.cfg.SettingsSyncInterval
	return w.r.queueDue(ctx, func(n *baremetal.Node, now time.Time) river.JobArgs {
		if !settingsDue(n, iv, now) {
			return nil
		}
		return ReadSettingsArgs{NodeID: n.ID}
	})
}

// queueDue queues, for every node of the list (read a page at a time),
// the job due returns for it (nil: none), a page's in one insert: the
// periodic passes that fan out per-node reads (settings, health).
func (r *Runner) queueDue(ctx context.Context, due func(n *baremetal.Node, now time.Time) river.JobArgs) error {
	f := store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit}}
	for {
		nodes, next, err := r.store.ListNodes(ctx, f)
		if err != nil {
			return err
		}
		var params []river.InsertManyParams
		for _, n := range nodes {
			if args := due(n, time.Now()); args != nil {
				params = append(params, river.InsertManyParams{Args: args})
			}
		}
		if len(params) > 0 {
			if _, err := r.q.InsertMany(ctx, params); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		f.After = next
	}
}

// settingsDue reports whether n's settings should be read back now.
func settingsDue(n *baremetal.Node, iv time.Duration, now time.Time) bool {
	if n.Settings.IsZero() || n.ProvisionState == baremetal.StateConfiguring || n.ProvisionState == baremetal.StateDeleting ||
		n.ProvisionState == baremetal.StateEnroll {
		return false
	}
	at := n.Observed.ReadAt
	return at == nil || now.Sub(*at) >= iv-iv/10 // a little early: passes drift
}

type readSettingsWorker struct {
	river.WorkerDefaults[ReadSettingsArgs]
	*nodeWork
}

func (w *readSettingsWorker) Work(ctx context.Context, job *river.Job[ReadSettingsArgs]) error {
	n, err := w.store.GetNode(ctx, job.Args.NodeID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Settings.IsZero() || n.ProvisionState == baremetal.StateConfiguring {
		return nil
	}
	obs, reg, err := w.readSettings(ctx, n, false)
	if err != nil {
		return err
	}
	_, err = w.recordObservedFrom(ctx, n.ID, obs, reg, false)
	return ignoreGone(err)
}
