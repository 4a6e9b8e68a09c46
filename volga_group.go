package volga

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"
	"gocloud.dev/blob"

	"github.com/volga-go/volga/internal/values"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
	"github.com/volga-go/volga/statestore"
)

// GroupConfig configures a Group.
type GroupConfig struct {
	// Source is the Kafka topic and how to read it. Brokers, Topic and
	// GroupID are required: the members of a Group are the processes
	// sharing GroupID. Partitions and StopAtEnd must be left unset. When
	// Schema is nil it is inferred once, from a sample, when NewGroup
	// runs; members that infer different schemas cannot restore each
	// other's checkpoints, so set Schema in production. HeartbeatInterval
	// and SessionTimeout tune membership; StartOffset is where a partition
	// without a checkpoint starts (default: its first message). Each
	// assigned partition gets a source of its own: DeadLetter is called
	// from several goroutines at once.
	Source kafka.Config

	// CheckpointURL (gocloud.dev/blob: file://, s3://, ...) or
	// CheckpointBucket (opened and closed by the caller) holds the
	// checkpoints, one prefix per partition ("p0003/"): every member of
	// the group must use the same bucket. One is required. The path of
	// an s3://, gs:// or azblob:// URL is a prefix in the bucket:
	// s3://ckpt/features is s3://ckpt?prefix=features/ (the drivers
	// themselves ignore it); give it as a path or as prefix=, not both.
	CheckpointURL    string
	CheckpointBucket *blob.Bucket
	// CheckpointInterval is the time between checkpoints of each
	// partition (default 10 s).
	CheckpointInterval time.Duration

	// Sink returns the sink of a partition's output. It is called each
	// time the partition is assigned to this member; a transactional
	// file sink (sink.CreateCSV, CreateJSONL, NewParquet) on a path of the
	// partition's own (out/part-p0003.csv), shared by the members (a
	// network file system), makes the union of the outputs exactly-once.
	// nil discards the output.
	Sink func(partition int) (sink.Sink, error)
	// LateSink, when set, returns the sink of a partition's late rows
	// that were not applied (see WithLateSink), like Sink: a
	// transactional file sink on a path of the partition's own holds
	// each of them once.
	LateSink func(partition int) (sink.Sink, error)

	// StateDir, when set, holds each partition's state store in a
	// subdirectory (p0003); the default is a temporary directory per
	// partition.
	StateDir string

	// Advertise is this member's address for lookups, such as the URL of
	// its HTTP handler. It is published in the group's member metadata,
	// so that a member asked for a key it does not own can name the owner
	// (NotOwnerError.Owner).
	Advertise string

	// Balancer is how the producers of the topic choose a message's
	// partition from its key: kafka-go's Murmur2Balancer (the default,
	// the Java client's default partitioner) or Hash (FNV-1a, Sarama's).
	// KeyEncoder is how they encode the PARTITION BY key into the message
	// key (default JSONKey, as sink/kafka writes it). Lookup uses both to
	// find a key's partition.
	Balancer   kafkago.Balancer
	KeyEncoder KeyEncoder

	// GroupBalancer assigns partitions to members (default kafka-go's
	// RangeGroupBalancer); every member must use the same.
	GroupBalancer kafkago.GroupBalancer
	// RebalanceTimeout bounds how long the group waits for its members to
	// rejoin after a rebalance starts (kafka-go's default 30 s): a member
	// stops its partitions' pipelines, each with a final checkpoint,
	// within it.
	RebalanceTimeout time.Duration
}

// KeyEncoder encodes the values of the PARTITION BY columns, in their
// order in the query, into a Kafka message key.
type KeyEncoder func(key []any) ([]byte, error)

// JSONKey encodes a one-column key as its JSON value ("alice", 42) and a
// longer one as a JSON array of them (["alice",42]), byte for byte as
// sink/kafka writes message keys: strings escape only quotes, backslashes
// and control characters (not &, <, > or U+2028, as encoding/json does),
// times are RFC 3339 in UTC with only the fractional digits needed
// (whatever the time's location), floats take Go's shortest form
// (strconv 'g'), and NULL is null.
func JSONKey(key []any) ([]byte, error) {
	if len(key) == 1 {
		return request.AppendJSON(nil, key[0]), nil
	}
	return request.AppendJSON(nil, key), nil
}

// RawKey encodes a one-column key as its bare text: a string as its
// bytes, a number or boolean in decimal (42, true), the way most
// producers key messages by an id. It refuses keys of several columns
// and NULL.
func RawKey(key []any) ([]byte, error) {
	if len(key) != 1 {
		return nil, fmt.Errorf("volga: RawKey encodes one key column, not %d", len(key))
	}
	switch v := key[0].(type) {
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	case int64:
		return strconv.AppendInt(nil, v, 10), nil
	case float64:
		return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
	case bool:
		return strconv.AppendBool(nil, v), nil
	case time.Time:
		return []byte(v.UTC().Format(time.RFC3339Nano)), nil
	case nil:
		return nil, errors.New("volga: RawKey cannot encode a NULL key")
	}
	return fmt.Appendf(nil, "%v", key[0]), nil
}

// NotOwnerError is returned by Group.Lookup for a key whose partition
// another member owns (or nobody, during a rebalance; or this member,
// whose pipeline of the partition is starting or stopping: Member is ""
// then, try again).
type NotOwnerError struct {
	// Partition is the key's partition.
	Partition int
	// Owner is the address the owning member advertises
	// (GroupConfig.Advertise); "" when no member owns the partition now
	// (a rebalance is under way) or the owner advertises none.
	Owner string
	// Member is the owner's member ID in the consumer group ("" when
	// none).
	Member string
}

// Error says who owns the partition, or that no member does now.
func (e *NotOwnerError) Error() string {
	switch {
	case e.Member == "":
		return fmt.Sprintf("volga: partition %d has no owner in the group now (rebalancing); try again", e.Partition)
	case e.Owner == "":
		return fmt.Sprintf("volga: partition %d is owned by group member %s, which advertises no address", e.Partition, e.Member)
	}
	return fmt.Sprintf("volga: partition %d is owned by %s", e.Partition, e.Owner)
}

// errGroupRan is returned by Group.Run when it is called again.
var errGroupRan = errors.New("volga: a group runs once; create it again to rerun")

// Group runs a streaming pipeline as one member of a Kafka consumer group
// (scale-out, as Kafka Streams does): the processes sharing
// GroupConfig.Source.GroupID split the topic's partitions, and this one
// runs, for every partition assigned to it, a pipeline of its own over
// that partition alone, checkpointed under the partition's prefix of the
// shared bucket. Window state is thereby sharded by partition, which is
// sharding by key as long as the producers key messages by the query's
// PARTITION BY columns (every window of the query must partition by the
// same columns). The topic's partition count must therefore stay: a
// member assigned a partition the topic did not have when NewGroup read
// it stops Run with an error, since producers then place keys on other
// partitions than the one holding their state.
//
// When the group rebalances (a member joins, stops or fails), every
// member stops its partitions' pipelines, each with a final checkpoint,
// before rejoining; the new owner of a partition then restores its state
// and offset from the partition's latest checkpoint and goes on. A member
// that dies without stopping leaves its partitions at their last
// periodic checkpoint: the new owner replays from there, and a
// transactional file sink discards what the dead member wrote after it,
// so the union of the outputs stays exactly-once.
//
// Offsets are committed to the group after each checkpoint, for lag
// monitoring; positions are restored from checkpoints, never from the
// group's offsets.
//
// Rebalancing is eager (kafka-go's protocol): every rebalance stops all
// of a member's pipelines, even those of partitions it keeps, and
// restarts them from their final checkpoints.
//
// A member the group dropped while it still runs (paused past
// SessionTimeout: a stopped process, a long GC pause, a network
// partition; or too slow to stop within RebalanceTimeout) writes no
// checkpoint once the group has gone on without it: before a checkpoint
// changes anything in the bucket, and again before its manifest, the
// member looks itself up in the group's description (pipeline.Fencer), so
// the new owner's checkpoints are never superseded by a stale one. The
// first refused checkpoint stops the member's pipelines (without final
// checkpoints); it then waits for the next generation and rejoins. Until
// then it may still stage rows next to a partition's shared file sink:
// each sink instance stages under names of its own (sink package), so
// the new owner publishes only its own epochs, and the dropped member,
// its checkpoints refused, publishes none.
type Group struct {
	query    string
	table    string
	cfg      GroupConfig
	opts     []Option
	log      *slog.Logger
	name     string
	values   *arrow.Schema // the JSON schema every partition's source decodes
	schema   *arrow.Schema // the sources' schema
	output   *arrow.Schema
	nparts   int
	keyCols  []string // the PARTITION BY columns, in order
	keyTypes []arrow.DataType
	lookupOK error // why lookups cannot be served (nil: they can)
	client   *kafkago.Client

	stop     chan struct{}
	stopOnce sync.Once

	mu     sync.Mutex
	ran    bool
	owned  map[int]*member
	gen    int32 // the generation of owned, -1 when none
	owners map[int]ownerInfo
	ownGen int32  // the generation owners were read in
	self   string // this member's ID in the group, from its last generation
}

// member is the pipeline of one partition this member owns.
type member struct {
	part int
	p    *Pipeline
	src  *kafka.Source
	done chan struct{}
	err  error
}

type ownerInfo struct{ member, addr string }

// NewGroup compiles query for a Group member. opts configure every
// partition's pipeline like those of SQL (WithMaxOutOfOrder,
// WithAllowedLateness, WithLookupRetention, WithParallelism,
// WithMemoryBudget, WithLogger, WithCheckpointRetain ...); the mode is
// Streaming; the source, sink and checkpoint bucket come from cfg, and
// WithSource, WithSink, WithCheckpoints and WithLateSink (see
// GroupConfig.LateSink) are refused.
// WithMetrics registers each partition's pipeline while this member runs
// it, as pipeline NAME-pNNNN (NAME from WithName, default "volga"; NNNN
// the partition): a partition that moves to another member leaves this
// member's registry, and its counters start again from zero wherever it
// runs next (Prometheus counts that as a counter reset). WithStateDir is
// the base of the partitions' directories, like GroupConfig.StateDir; a
// WithDeadLetters function is called from the goroutines of several
// partitions at once.
// NewGroup reads the topic's metadata (and, without cfg.Source.Schema, a
// sample of its messages).
func NewGroup(query string, cfg GroupConfig, opts ...Option) (*Group, error) {
	sc := cfg.Source
	switch {
	case len(sc.Brokers) == 0 || sc.Topic == "":
		return nil, errors.New("volga: GroupConfig.Source needs Brokers and Topic")
	case sc.GroupID == "":
		return nil, errors.New("volga: GroupConfig.Source.GroupID is empty: a Group is a consumer group's member")
	case len(sc.Partitions) > 0:
		return nil, errors.New("volga: GroupConfig.Source.Partitions must be empty: the group assigns the partitions")
	case sc.StopAtEnd:
		return nil, errors.New("volga: GroupConfig.Source.StopAtEnd is not supported: a Group runs until stopped")
	case (cfg.CheckpointURL == "") == (cfg.CheckpointBucket == nil):
		return nil, errors.New("volga: a Group needs one of GroupConfig.CheckpointURL and CheckpointBucket: partitions move between members through checkpoints")
	}
	if cfg.CheckpointURL != "" {
		u, err := checkpointBucketURL(cfg.CheckpointURL)
		if err != nil {
			return nil, err
		}
		cfg.CheckpointURL = u
	}
	var probe config
	probe.sources = map[string]source.Source{}
	for _, o := range opts {
		o(&probe)
	}
	switch {
	case len(probe.sources) > 0 || probe.sink != nil:
		return nil, errors.New("volga: NewGroup takes its source and sink from GroupConfig, not WithSource or WithSink")
	case probe.ckptURL != "" || (probe.run.Checkpoints != nil && probe.run.Checkpoints.Bucket != nil):
		return nil, errors.New("volga: NewGroup takes its checkpoint bucket from GroupConfig, not WithCheckpoints")
	case probe.run.Late != nil:
		return nil, errors.New("volga: NewGroup takes the late rows' sinks from GroupConfig.LateSink, one per partition, not WithLateSink")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = probe.run.StateDir // WithStateDir: the base of the partitions' directories
	}
	if cfg.Balancer == nil {
		cfg.Balancer = &kafkago.Murmur2Balancer{}
	}
	if cfg.KeyEncoder == nil {
		cfg.KeyEncoder = JSONKey
	}
	if cfg.GroupBalancer == nil {
		cfg.GroupBalancer = kafkago.RangeGroupBalancer{}
	}
	g := &Group{query: query, cfg: cfg, opts: opts, stop: make(chan struct{}), gen: -1, ownGen: -1,
		owned: map[int]*member{}, log: probe.run.Logger, name: probe.run.Name}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.name == "" {
		g.name = DefaultName
	}

	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		return nil, err
	}
	g.table = plan.Table
	if g.keyCols, err = shardKey(plan); err != nil {
		return nil, err
	}

	// The topic: partition count, and the schema every member decodes.
	probeCfg := sc
	probeCfg.GroupID = ""
	src, err := kafka.NewSource(probeCfg)
	if err != nil {
		return nil, err
	}
	g.values, g.schema, g.nparts = src.ValueSchema(), src.Schema(), src.Partitions()
	src.Close()
	g.cfg.Source.Schema = g.values

	// Compiled once here for its errors and schema, without checkpoints.
	p, err := SQL(query, append(slices.Clone(opts), WithSource(g.table, source.NewMemory(g.schema)),
		func(c *config) { c.run.Checkpoints = nil })...)
	if err != nil {
		return nil, err
	}
	g.output = p.Schema()
	g.lookupOK = p.CanLookup()
	for _, k := range g.keyCols {
		f, ok := fieldFold(g.schema, k)
		if !ok {
			if g.lookupOK == nil {
				g.lookupOK = fmt.Errorf("volga: the key column %q is computed by the query; a Group finds a key's partition from source columns only", k)
			}
			g.keyTypes = append(g.keyTypes, nil)
			continue
		}
		g.keyTypes = append(g.keyTypes, f.Type)
	}
	g.client = &kafkago.Client{Addr: kafkago.TCP(sc.Brokers...), Transport: groupTransport(sc.Dialer)}
	return g, nil
}

// checkpointBucketURL returns the URL to open for a checkpoint bucket
// URL. The object-store drivers (s3://, gs://, azblob://) take the
// bucket from the URL's host and ignore its path, so that s3://ckpt/a and
// s3://ckpt/b would be one place, the root of the bucket ckpt, where the
// groups configured so would restore each other's partitions: the path
// becomes the prefix parameter instead.
func checkpointBucketURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, nil // blob.OpenBucket says what is wrong with it
	}
	switch u.Scheme {
	case "s3", "gs", "azblob":
	default:
		return raw, nil
	}
	path := strings.Trim(u.Path, "/")
	if path == "" {
		return raw, nil
	}
	q := u.Query()
	if q.Has("prefix") {
		return "", fmt.Errorf("volga: the checkpoint bucket %s has a path and a prefix parameter: give the prefix once", raw)
	}
	q.Set("prefix", path+"/")
	u.Path, u.RawPath, u.RawQuery = "", "", q.Encode()
	return u.String(), nil
}

// shardKey returns the columns the state is sharded by: the PARTITION BY
// columns every window shares (or the GROUP BY keys).
func shardKey(plan *pipeline.Plan) ([]string, error) {
	var key []string
	set := func(cols []string) error {
		if key == nil {
			key = cols
			return nil
		}
		a, b := lowerSorted(key), lowerSorted(cols)
		if !slices.Equal(a, b) {
			return fmt.Errorf("volga: a Group shards window state by partition, so every window must PARTITION BY the same columns (the producers' message key); this query has (%s) and (%s)",
				strings.Join(key, ", "), strings.Join(cols, ", "))
		}
		return nil
	}
	for _, w := range plan.Windows {
		if err := set(w.PartitionBy); err != nil {
			return nil, err
		}
	}
	if plan.Group != nil {
		if err := set(plan.Group.KeyCols); err != nil {
			return nil, err
		}
	}
	return key, nil
}

func lowerSorted(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = strings.ToLower(c)
	}
	slices.Sort(out)
	return out
}

func groupTransport(d *kafkago.Dialer) *kafkago.Transport {
	t := &kafkago.Transport{}
	if d != nil {
		t.TLS, t.SASL, t.ClientID = d.TLS, d.SASLMechanism, d.ClientID
		if d.Timeout > 0 {
			t.DialTimeout = d.Timeout
		}
	}
	return t
}

// Schema is the schema of the output rows.
func (g *Group) Schema() *arrow.Schema { return g.output }

// Partitions returns the number of partitions of the topic.
func (g *Group) Partitions() int { return g.nparts }

// KeyColumns are the columns a Lookup key must give: the query's
// PARTITION BY columns.
func (g *Group) KeyColumns() []string { return slices.Clone(g.keyCols) }

// Owned returns the partitions this member runs now, ascending.
func (g *Group) Owned() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(maps.Keys(g.owned))
}

// Stop makes Run stop gracefully and returns at once: every partition's
// pipeline stops with a final checkpoint, then the member leaves the
// group, whose other members take its partitions over from those
// checkpoints; Run then returns nil. Stop before Run makes Run return at
// once.
func (g *Group) Stop() { g.stopOnce.Do(func() { close(g.stop) }) }

// Run joins the group and runs the pipelines of the partitions assigned
// to this member, generation after generation, until Stop (nil), ctx is
// cancelled (ctx.Err(), with no final checkpoints: as a crash would), or
// a partition's pipeline fails (its error, after the others are stopped
// gracefully). A Group runs once.
func (g *Group) Run(ctx context.Context) (err error) {
	g.mu.Lock()
	if g.ran {
		g.mu.Unlock()
		return errGroupRan
	}
	g.ran = true
	g.mu.Unlock()
	select {
	case <-g.stop:
		return nil
	default:
	}
	bucket := g.cfg.CheckpointBucket
	if bucket == nil {
		if bucket, err = blob.OpenBucket(ctx, g.cfg.CheckpointURL); err != nil {
			return fmt.Errorf("volga: opening the checkpoint bucket %s: %w", g.cfg.CheckpointURL, err)
		}
		defer bucket.Close()
	}
	sc := g.cfg.Source
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                sc.GroupID,
		Brokers:           sc.Brokers,
		Dialer:            sc.Dialer,
		Topics:            []string{sc.Topic},
		GroupBalancers:    []kafkago.GroupBalancer{advertiser{GroupBalancer: g.cfg.GroupBalancer, addr: g.cfg.Advertise}},
		HeartbeatInterval: sc.HeartbeatInterval,
		SessionTimeout:    sc.SessionTimeout,
		RebalanceTimeout:  g.cfg.RebalanceTimeout,
		StartOffset:       kafka.FirstOffset,
		JoinGroupBackoff:  time.Second,
		ErrorLogger: kafkago.LoggerFunc(func(msg string, args ...any) {
			g.log.Debug("volga: consumer group: "+fmt.Sprintf(msg, args...), "group", sc.GroupID)
		}),
	})
	if err != nil {
		return fmt.Errorf("volga: group %q: %w", sc.GroupID, err)
	}
	defer g.client.Transport.(*kafkago.Transport).CloseIdleConnections()
	// Next waits for a generation until ctx is done or Stop is called.
	nextCtx, cancelNext := context.WithCancel(ctx)
	defer cancelNext()
	go func() {
		select {
		case <-g.stop:
			cancelNext()
		case <-nextCtx.Done():
		}
	}()
	g.log.Info("volga: joining consumer group", "group", sc.GroupID, "topic", sc.Topic, "advertise", g.cfg.Advertise)
	for {
		gen, err := cg.Next(nextCtx)
		if err != nil {
			if nextCtx.Err() != nil || errors.Is(err, kafkago.ErrGroupClosed) {
				break
			}
			level := slog.LevelWarn
			if errors.Is(err, kafkago.RebalanceInProgress) {
				level = slog.LevelDebug // routine: the next join follows
			}
			g.log.Log(ctx, level, "volga: consumer group: joining failed; retrying", "group", sc.GroupID, "err", err)
			continue
		}
		stopped, err := g.runGeneration(ctx, gen, bucket)
		if err != nil || stopped {
			cerr := cg.Close()
			if err == nil && cerr != nil && ctx.Err() == nil {
				g.log.Warn("volga: leaving the consumer group", "group", sc.GroupID, "err", cerr)
			}
			return err
		}
	}
	cg.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// runGeneration runs the pipelines of the partitions gen assigns to this
// member until the generation ends, Stop, ctx or a failure, and stops
// them before the generation may end: the member rejoins (and the group
// hands the partitions to other members) only once every final
// checkpoint is written. It reports whether Stop was called.
func (g *Group) runGeneration(ctx context.Context, gen *kafkago.Generation, bucket *blob.Bucket) (stopped bool, err error) {
	topic := g.cfg.Source.Topic
	var parts []int
	for _, pa := range gen.Assignments[topic] {
		parts = append(parts, pa.ID)
	}
	slices.Sort(parts)
	if len(parts) > 0 && parts[len(parts)-1] >= g.nparts {
		// Producers place a key by the partition count: with more
		// partitions, keys move to partitions without their state.
		return false, fmt.Errorf("volga: the topic %s now has more than the %d partitions it had when the group started (partition %d was assigned): keys now placed on other partitions would lose their window state; start the group's features afresh (another checkpoint location) or keep the topic's partition count", topic, g.nparts, parts[len(parts)-1])
	}
	ended, release := make(chan struct{}), make(chan struct{})
	gen.Start(func(gctx context.Context) {
		<-gctx.Done()
		close(ended)
		<-release
	})
	defer close(release)
	g.log.Info("volga: group generation", "generation", gen.ID, "member", gen.MemberID, "partitions", parts)

	g.mu.Lock()
	g.self = gen.MemberID
	g.mu.Unlock()
	finished := make(chan *member, len(parts))
	var running []*member
	for _, p := range parts {
		m, err := g.startPartition(ctx, gen, ended, p, bucket, finished)
		if err != nil {
			g.teardown(ctx, gen, running)
			return false, err
		}
		running = append(running, m)
	}
	g.mu.Lock()
	g.gen = gen.ID
	g.mu.Unlock()

	select {
	case <-ended:
	case <-g.stop:
		stopped = true
	case <-ctx.Done():
	case m := <-finished:
		switch {
		case m.err == nil:
			err = fmt.Errorf("volga: the pipeline of partition %d ended by itself", m.part)
		case g.droppedBy(ctx, gen, m.err):
			// Stop the other partitions too and wait for the next
			// generation (kafka-go ends this one once it hears of it).
			g.log.Warn("volga: the group went on without this member: stopping its partitions", "partition", m.part, "err", m.err)
		default:
			err = fmt.Errorf("volga: partition %d: %w", m.part, m.err)
		}
	}
	if terr := g.teardown(ctx, gen, running); err == nil {
		err = terr
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return stopped, err
}

// startPartition starts the pipeline of partition p: it restores the
// partition's latest checkpoint, if any, and reads the partition from
// there.
func (g *Group) startPartition(ctx context.Context, gen *kafkago.Generation, ended <-chan struct{}, p int, bucket *blob.Bucket, finished chan<- *member) (*member, error) {
	kc := g.cfg.Source
	kc.GroupID, kc.Partitions = "", []int{p}
	src, err := kafka.NewSource(kc)
	if err != nil {
		return nil, fmt.Errorf("volga: partition %d: %w", p, err)
	}
	var out, late sink.Sink
	closeAll := func() {
		src.Close()
		for _, s := range []sink.Sink{out, late} {
			if s != nil {
				s.Close()
			}
		}
	}
	if g.cfg.Sink != nil {
		if out, err = g.cfg.Sink(p); err != nil {
			closeAll()
			return nil, fmt.Errorf("volga: partition %d: opening its sink: %w", p, err)
		}
	}
	if g.cfg.LateSink != nil {
		if late, err = g.cfg.LateSink(p); err != nil {
			closeAll()
			return nil, fmt.Errorf("volga: partition %d: opening its late rows' sink: %w", p, err)
		}
	}
	shard := fmt.Sprintf("p%04d", p)
	opts := slices.Clone(g.opts)
	opts = append(opts,
		WithSource(g.table, &partitionSource{src: src, gen: gen, ended: ended, topic: kc.Topic, part: p, idle: g.interval(),
			fence: func(ctx context.Context) error { return g.stillMember(ctx, gen) }}),
		WithMode(Streaming),
		WithName(g.name+"-"+shard),
		func(c *config) {
			ck := c.ckpt()
			ck.Bucket, ck.Prefix = bucket, shard+"/"
			if dir, ok := statestore.SyncDir(g.cfg.CheckpointURL); ok && g.cfg.CheckpointBucket == nil {
				ck.SyncDir = dir
			}
			if g.cfg.CheckpointInterval > 0 {
				ck.Interval = g.cfg.CheckpointInterval
			}
			c.run.StateDir = ""
			if g.cfg.StateDir != "" {
				c.run.StateDir = filepath.Join(g.cfg.StateDir, shard)
			}
			if m, ok := c.run.Observer.(*pipelineMetrics); ok {
				m.transient = true
			}
		})
	if out != nil {
		opts = append(opts, WithSink(out))
	}
	if late != nil {
		opts = append(opts, WithLateSink(late))
	}
	pl, err := SQL(g.query, opts...)
	if err != nil {
		closeAll()
		return nil, err
	}
	m := &member{part: p, p: pl, src: src, done: make(chan struct{})}
	g.mu.Lock()
	g.owned[p] = m
	g.mu.Unlock()
	go func() {
		m.err = pl.Run(ctx)
		if cerr := src.Close(); cerr != nil && m.err == nil {
			m.err = cerr
		}
		close(m.done)
		finished <- m
	}()
	return m, nil
}

// teardown stops the running pipelines of generation gen, gracefully
// (final checkpoints) unless ctx is done, and waits for them. A failure
// once the group went on without this member (a final checkpoint
// refused: pipeline.ErrFenced) is no failure of the member: the
// partition's new owner resumes from the checkpoint before it.
func (g *Group) teardown(ctx context.Context, gen *kafkago.Generation, running []*member) error {
	if ctx.Err() == nil {
		for _, m := range running {
			m.p.Stop()
		}
	}
	var err error
	for _, m := range running {
		<-m.done
		if m.err != nil && ctx.Err() == nil && g.droppedBy(ctx, gen, m.err) {
			g.log.Warn("volga: the group went on without this member: the partition's final checkpoint was not written; its new owner resumes from the one before",
				"partition", m.part, "err", m.err)
			continue
		}
		if m.err != nil && err == nil && ctx.Err() == nil {
			err = fmt.Errorf("volga: partition %d: %w", m.part, m.err)
		}
	}
	g.mu.Lock()
	for _, m := range running {
		if g.owned[m.part] == m {
			delete(g.owned, m.part)
		}
	}
	g.gen = -1
	g.mu.Unlock()
	return err
}

// interval is the checkpoint interval of the partitions' pipelines.
func (g *Group) interval() time.Duration {
	if g.cfg.CheckpointInterval > 0 {
		return g.cfg.CheckpointInterval
	}
	c := config{sources: map[string]source.Source{}}
	for _, o := range g.opts {
		o(&c)
	}
	if c.run.Checkpoints != nil && c.run.Checkpoints.Interval > 0 {
		return c.run.Checkpoints.Interval
	}
	return 10 * time.Second
}

// partitionSource is the source of one partition's pipeline: the Kafka
// source of that partition, seen as unpartitioned (one watermark), which
// commits the offsets of its checkpoints to the group.
type partitionSource struct {
	src   *kafka.Source
	gen   *kafkago.Generation
	ended <-chan struct{}
	topic string
	part  int
	idle  time.Duration // the checkpoint interval
	// fence asks the group coordinator whether the member is still in
	// gen (Group.stillMember).
	fence func(context.Context) error
}

// Fence implements pipeline.Fencer: a checkpoint of the partition is
// written only while this member is in the generation that assigned it
// (a rebalance in progress included: the group waits for the member's
// final checkpoints before it hands the partition on). A member paused
// past its session timeout (a stopped process, a long GC pause, a
// network partition) was dropped from the group, and the partition
// handed to another member, which writes its checkpoints now: the paused
// member, running again, writes none over them, and its pipelines stop
// at the first refused checkpoint.
//
// A member the group's description does not list is refused with
// pipeline.ErrFenced (its pipeline ends); one whose membership could not
// be read (the coordinator did not answer) has the checkpoint refused
// and goes on.
func (s *partitionSource) Fence(ctx context.Context, _ []byte) error {
	err := s.fence(ctx)
	if errors.Is(err, errNotMember) {
		return fmt.Errorf("%w: %w", pipeline.ErrFenced, err)
	}
	return err
}

func (s *partitionSource) Schema() *arrow.Schema { return s.src.Schema() }

// Read returns the partition's next batch or, when nothing arrived for
// the checkpoint interval, an empty batch: the engine takes a checkpoint
// due only between batches, and a quiet partition's output is published
// only by a checkpoint. (A cancelled Read of the Kafka source consumes
// nothing.)
func (s *partitionSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	rctx, cancel := context.WithTimeout(ctx, s.idle)
	defer cancel()
	rec, err := s.src.Read(rctx)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s.src.Schema())
		defer b.Release()
		return b.NewRecordBatch(), nil
	}
	return rec, err
}
func (s *partitionSource) Close() error              { return nil } // closed by the Group
func (s *partitionSource) Position() ([]byte, error) { return s.src.Position() }
func (s *partitionSource) Seek(pos []byte) error     { return s.src.Seek(pos) }
func (s *partitionSource) DeadLetters() int64        { return s.src.DeadLetters() }

// Commit stores the checkpoint's offset in the group while the
// generation that assigned the partition lasts.
func (s *partitionSource) Commit(ctx context.Context, pos []byte) error {
	select {
	case <-s.ended:
		return nil // the next owner commits
	default:
	}
	next, err := kafka.DecodePosition(s.topic, pos)
	if err != nil {
		return err
	}
	off, ok := next[s.part]
	if !ok {
		return nil
	}
	return s.gen.CommitOffsets(map[string]map[int]int64{s.topic: {s.part: off}})
}

// droppedBy reports whether err, a partition pipeline's failure, is that
// of a member the group went on without: a checkpoint refused by the
// fence (pipeline.ErrFenced), or any failure once the member is no
// longer in the group (the new owner may have removed the files this
// member staged next to a shared file sink, say). Such a failure ends
// the member's part in gen, not the member.
func (g *Group) droppedBy(ctx context.Context, gen *kafkago.Generation, err error) bool {
	return errors.Is(err, pipeline.ErrFenced) || errors.Is(g.stillMember(ctx, gen), errNotMember)
}

// describeTimeout bounds a fence's DescribeGroups: a coordinator that does
// not answer in time leaves ownership unconfirmed (the checkpoint fails;
// the run goes on). It bounds a lookup's too (see owner): the lookup is
// unavailable, to be tried again.
const describeTimeout = 10 * time.Second

// errNotMember is stillMember's answer when the group's description does
// not list the member.
var errNotMember = errors.New("the group went on without this member")

// stillMember asks the group's coordinator whether this member is still
// in the group, from the group's description (DescribeGroups): a member
// of generation gen is listed until it leaves, rejoins (which this
// member does only once every pipeline of gen has stopped) or is dropped
// (its session or the rebalance timed out), so while it is listed no
// later generation has handed its partitions to another member. Any
// error, unreachable coordinators included, is reported: a checkpoint is
// refused when ownership cannot be confirmed. (A heartbeat would say it
// too, but kafka-go's Client.Heartbeat reads the error code of responses
// v1 and later from the wrong field.)
func (g *Group) stillMember(ctx context.Context, gen *kafkago.Generation) error {
	id := g.cfg.Source.GroupID
	dctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	res, err := g.client.DescribeGroups(dctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{id}})
	if err != nil {
		return fmt.Errorf("describing group %q: %w", id, err)
	}
	for _, d := range res.Groups {
		if d.GroupID != id {
			continue
		}
		if d.Error != nil {
			return fmt.Errorf("describing group %q: %w", id, d.Error)
		}
		for _, m := range d.Members {
			if m.MemberID == gen.MemberID {
				return nil
			}
		}
	}
	return fmt.Errorf("group %q, member %s of generation %d: %w", id, gen.MemberID, gen.ID, errNotMember)
}

// advertiser is a group balancer that publishes the member's address in
// its metadata.
type advertiser struct {
	kafkago.GroupBalancer
	addr string
}

func (a advertiser) UserData() ([]byte, error) { return []byte(a.addr), nil }

// PartitionOf returns the partition of the topic that holds the messages
// of key (PARTITION BY column -> value), as the producers place them
// (GroupConfig.Balancer and KeyEncoder).
func (g *Group) PartitionOf(key map[string]any) (int, error) {
	if len(g.keyCols) == 0 {
		return 0, errors.New("volga: the query has no PARTITION BY key")
	}
	vals := make([]any, len(g.keyCols))
	for i, col := range g.keyCols {
		v, ok := valueFold(key, col)
		if !ok {
			return 0, fmt.Errorf("volga: the key has no value for column %q (key columns: %s)", col, strings.Join(g.keyCols, ", "))
		}
		if g.keyTypes[i] == nil {
			return 0, fmt.Errorf("volga: the key column %q is computed by the query; a Group finds a key's partition from source columns only", col)
		}
		tv, err := values.Coerce(v, g.keyTypes[i])
		if err != nil {
			return 0, fmt.Errorf("volga: key column %q: %v", col, err)
		}
		vals[i] = tv
	}
	k, err := g.cfg.KeyEncoder(vals)
	if err != nil {
		return 0, err
	}
	parts := make([]int, g.nparts)
	for i := range parts {
		parts[i] = i
	}
	return g.cfg.Balancer.Balance(kafkago.Message{Topic: g.cfg.Source.Topic, Key: k}, parts...), nil
}

// route returns the pipeline owning key's partition, or a *NotOwnerError.
func (g *Group) route(ctx context.Context, key map[string]any) (*Pipeline, error) {
	p, err := g.PartitionOf(key)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	m, self := g.owned[p], g.self
	g.mu.Unlock()
	if m != nil {
		return m.p, nil
	}
	o, err := g.owner(ctx, p)
	if err != nil {
		// The coordinator did not say who owns it: a lookup to try again,
		// as during a rebalance, not a bad one.
		return nil, request.Unavailable(err)
	}
	if o.member != "" && o.member == self {
		// This member is starting the partition's pipeline (or stopping
		// it): no other member to send the lookup to, try again.
		return nil, &NotOwnerError{Partition: p}
	}
	return nil, &NotOwnerError{Partition: p, Owner: o.addr, Member: o.member}
}

// Lookup is Pipeline.Lookup for the group: the features of key as of at,
// answered by the pipeline of the key's partition (see PartitionOf) when
// this member owns it; otherwise a *NotOwnerError names the member that
// does, from the group's description (DescribeGroups). When that
// description cannot be read (or the coordinator has not answered within
// 10 s) the error matches request.ErrUnavailable.
func (g *Group) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (LookupResult, error) {
	if g.lookupOK != nil {
		return LookupResult{}, g.lookupOK
	}
	p, err := g.route(ctx, key)
	if err != nil {
		return LookupResult{}, err
	}
	return p.Lookup(ctx, key, at, row)
}

// LookupInto is Pipeline.LookupInto for the group, routed as Lookup is.
func (g *Group) LookupInto(ctx context.Context, dst *FeatureRow, key map[string]any, at time.Time, row map[string]any) error {
	if g.lookupOK != nil {
		return g.lookupOK
	}
	p, err := g.route(ctx, key)
	if err != nil {
		return err
	}
	return p.LookupInto(ctx, dst, key, at, row)
}

// owner returns the member owning partition p, from DescribeGroups
// (given up after describeTimeout); the answer is kept for the
// generation this member is in.
func (g *Group) owner(ctx context.Context, p int) (ownerInfo, error) {
	g.mu.Lock()
	if g.gen >= 0 && g.ownGen == g.gen {
		if o, ok := g.owners[p]; ok {
			g.mu.Unlock()
			return o, nil
		}
	}
	gen := g.gen
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	res, err := g.client.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{g.cfg.Source.GroupID}})
	if err != nil {
		return ownerInfo{}, fmt.Errorf("volga: describing group %q: %w", g.cfg.Source.GroupID, err)
	}
	owners := map[int]ownerInfo{}
	for _, grp := range res.Groups {
		if grp.Error != nil {
			return ownerInfo{}, fmt.Errorf("volga: describing group %q: %w", g.cfg.Source.GroupID, grp.Error)
		}
		for _, mem := range grp.Members {
			for _, t := range mem.MemberAssignments.Topics {
				if t.Topic != g.cfg.Source.Topic {
					continue
				}
				for _, part := range t.Partitions {
					owners[part] = ownerInfo{member: mem.MemberID, addr: string(mem.MemberMetadata.UserData)}
				}
			}
		}
	}
	if len(owners) == g.nparts && gen >= 0 {
		g.mu.Lock()
		if g.gen == gen {
			g.owners, g.ownGen = owners, gen
		}
		g.mu.Unlock()
	}
	return owners[p], nil
}
