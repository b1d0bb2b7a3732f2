package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// The cluster answers, stops answering when stopped, and answers again,
// with what was committed, when started.
func TestClusterStopsAndStarts(t *testing.T) {
	c := storetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (v int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	c.Stop(t, "fast")
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("a stopped cluster answered")
	}
	c.Start(t)
	if err := exec("SELECT v FROM kept"); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
