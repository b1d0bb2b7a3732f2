package sqlite

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"

	msqlite "modernc.org/sqlite"
)

// A per-connection cache of prepared statements.
//
// modernc.org/sqlite compiles the SQL text on every ExecContext/QueryContext
// that is not a prepared statement, and compiling is most of the cost of a
// short statement: profiling DELETE /v1/instances showed about half of the
// delete transaction's CPU in SQLite's parser, most of it for River's job
// insert (riversqlite passes its SQL text to the *sql.Tx every time). On
// the single writer connection that CPU is time every other writer waits.
//
// Explicit *sql.Stmt values would only cover the store's own queries, so
// the cache sits below database/sql instead, in a wrapper of the driver's
// connection: every single statement run on a connection (ours and
// River's, inside or outside transactions) is compiled once per
// connection and then reset and rebound. A prepared SQLite statement
// recompiles itself when the schema changes (sqlite3_prepare_v2), so
// migrations need no invalidation.
//
// database/sql never uses one driver connection from two goroutines at
// once, but a caller may open a second query with the same text while the
// rows of the first are still open on the same connection (a query inside
// a loop over rows, in one transaction). A cached statement is therefore
// lent to one use at a time; a use that finds it lent runs uncached.

// stmtCacheSize bounds the statements kept per connection. The store and
// River together run a few dozen distinct texts (ListNodes and River's job
// list build theirs from a handful of filter combinations); the bound only
// keeps a pathological caller from growing the cache without limit.
const stmtCacheSize = 128

// cachingConnector opens connections that cache their statements.
type cachingConnector struct {
	driver.Connector
	// uninterruptible, when set and true, runs statements without their
	// context's cancellation (see cachingConn.stmtCtx).
	uninterruptible *atomic.Bool
}

func newCachingConnector(dsn string, uninterruptible *atomic.Bool) (driver.Connector, error) {
	c, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{c, uninterruptible}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cc, err := newCachingConn(conn)
	if err != nil {
		return nil, err
	}
	cc.uninterruptible = c.uninterruptible
	return cc, nil
}

// The driver's connection implements all of these (see
// modernc.org/sqlite.NewConnector); the wrapper must too, or database/sql
// silently falls back to context-free paths.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

var (
	_ sqliteConn                        = (*cachingConn)(nil)
	_ interface{ Unwrap() driver.Conn } = (*cachingConn)(nil)
	_ sqliteRows                        = (*cachedRows)(nil)
)

// sqliteRows is what the driver's rows implement (ColumnTypes needs the
// optional column-type interfaces).
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachingConn is a driver connection with a statement cache.
type cachingConn struct {
	sqliteConn

	mu    sync.Mutex
	stmts map[string]*list.Element // of *cachedStmt, most recently used at the front
	lru   list.List

	uninterruptible *atomic.Bool // nil: never
}

// stmtCtx is the context a statement runs under. While a commit group
// runs (group.go), a cancelled caller must not interrupt its statement:
// SQLite rolls back the whole transaction when an INSERT, UPDATE or
// DELETE inside it is interrupted, and with it the other callers' work.
// Such a statement still runs to its end (they are short), and its
// caller's fn decides; a context already cancelled before the statement
// fails it in database/sql, as ever.
func (c *cachingConn) stmtCtx(ctx context.Context) context.Context {
	if c.uninterruptible != nil && c.uninterruptible.Load() {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func newCachingConn(c driver.Conn) (*cachingConn, error) {
	sc, ok := c.(sqliteConn)
	if !ok {
		_ = c.Close()
		return nil, errors.New("sqlite: driver connection lacks the context-aware interfaces")
	}
	return &cachingConn{sqliteConn: sc, stmts: map[string]*list.Element{}}, nil
}

// Unwrap returns the driver's connection (modernc.org/sqlite.Limit looks
// through wrappers this way).
func (c *cachingConn) Unwrap() driver.Conn { return c.sqliteConn }

// cachedStmt is a prepared statement owned by the cache.
type cachedStmt struct {
	driver.Stmt
	query   string
	lent    bool // an open rows uses it
	evicted bool // left the cache while lent: close when returned
}

// take returns the cached statement for query, preparing it on a miss, and
// marks it lent; nil means "run uncached" (the statement is lent already).
func (c *cachingConn) take(ctx context.Context, query string) (*cachedStmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.stmts[query]; ok {
		s := el.Value.(*cachedStmt)
		if s.lent {
			return nil, nil
		}
		c.lru.MoveToFront(el)
		s.lent = true
		return s, nil
	}
	ds, err := c.PrepareContext(ctx, query) // the driver's: explicit Prepare calls are not cached
	if err != nil {
		return nil, err
	}
	s := &cachedStmt{Stmt: ds, query: query, lent: true}
	c.stmts[query] = c.lru.PushFront(s)
	if c.lru.Len() > stmtCacheSize {
		old := c.lru.Back()
		c.lru.Remove(old)
		victim := old.Value.(*cachedStmt)
		delete(c.stmts, victim.query)
		if victim.lent {
			victim.evicted = true
		} else {
			_ = victim.Close()
		}
	}
	return s, nil
}

// giveBack ends a loan of s.
func (c *cachingConn) giveBack(s *cachedStmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.lent = false
	if s.evicted {
		_ = s.Close()
	}
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx = c.stmtCtx(ctx)
	s, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	defer c.giveBack(s)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx = c.stmtCtx(ctx)
	s, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.giveBack(s)
		return nil, err
	}
	sr, ok := rows.(sqliteRows)
	if !ok {
		_ = rows.Close()
		c.giveBack(s)
		return nil, errors.New("sqlite: driver rows lack the column-type interfaces")
	}
	// The driver's rows use the statement until closed; it returns to the
	// cache then.
	return &cachedRows{sqliteRows: sr, conn: c, stmt: s}, nil
}

// Close finalizes the cached statements, then closes the connection.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	var errs []error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		errs = append(errs, el.Value.(*cachedStmt).Close())
	}
	c.stmts, c.lru = nil, list.List{}
	c.mu.Unlock()
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// cachedRows returns its statement to the cache when closed.
type cachedRows struct {
	sqliteRows
	conn   *cachingConn
	stmt   *cachedStmt
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.sqliteRows.Close()
	r.conn.giveBack(r.stmt)
	return err
}
