package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/volga-go/volga/source"
)

// MetadataPartition is the schema metadata key under which each batch
// records its partition (see PartitionOf). Schema() has no metadata.
const MetadataPartition = "volga.kafka.partition"

// ErrClosed is returned by Read, Seek and Commit after Close.
var ErrClosed = errors.New("source/kafka: closed")

// ErrNoGroup is returned by Commit on a source without Config.GroupID.
var ErrNoGroup = errors.New("source/kafka: Commit needs a consumer group (Config.GroupID)")

// Source reads the JSON or Avro messages (Config.Format) of a Kafka topic
// as Arrow record batches. It
// implements source.Source, source.Seeker and source.Partitioned.
//
// Read, Seek, Position, PartitionOf and Close are meant to be called from
// one goroutine (the engine's reader); Commit, Partitions, Assigned,
// Schema and DeadLetters may be called from any goroutine.
type Source struct {
	cfg     Config
	values  *arrow.Schema // the schema of the JSON values (Config.Schema or inferred)
	dec     *decoder
	avro    *avroValues // Format "avro"'s; nil for JSON
	bld     *array.RecordBuilder
	schemas []*arrow.Schema // per partition: the schema with MetadataPartition
	nparts  int             // the topic's partitions
	// slot maps a partition to its place in [0, Partitions()): the
	// partition itself, or with Config.Partitions its index there (-1
	// for a partition not read).
	slot []int
	// nslots is Partitions(): len(Config.Partitions), or nparts.
	nslots int
	hwm    []int64 // per partition, with StopAtEnd: the end to read to
	first  []int64 // per partition, with StopAtEnd: the first offset at the start

	transport *kafkago.Transport
	client    *kafkago.Client
	dlq       *kafkago.Writer

	ctx    context.Context // the source's lifetime
	cancel context.CancelFunc
	events chan event

	// assignedNow is the sorted partitions of parts, for Assigned.
	assignedNow atomic.Pointer[[]int]

	// Reader-side state, owned by the goroutine calling Read.
	parts    map[int]*part // partitions being read
	next     map[int]int64 // next offset to read: the position
	assigned bool          // direct mode, or a group generation is on
	fatal    error         // a fetch error that ends reading
	closed   bool

	// Group state, shared with the group goroutine and Commit.
	group   *kafkago.ConsumerGroup
	groupWG sync.WaitGroup
	mu      sync.Mutex
	gen     *kafkago.Generation
	genSet  chan struct{} // closed and replaced when gen is set

	dead atomic.Int64
}

// part is one partition being read.
type part struct {
	id    int
	buf   []kafkago.Message // fetched, not yet returned by Read
	since time.Time         // when buf[0] arrived
	done  bool              // StopAtEnd: nothing more will come
	f     *fetcher
}

// event is what the fetchers and the group goroutine tell Read.
type event struct {
	f      *fetcher
	msg    kafkago.Message
	err    error
	end    bool        // f reached the end (StopAtEnd)
	assign *assignment // a new group generation
	revoke bool        // the group generation ended
}

type assignment struct {
	generation int32
	offsets    map[int]int64 // partition -> committed offset or FirstOffset/LastOffset
}

// NewSource connects to the brokers, reads the topic's metadata (and,
// without Config.Schema, a sample of its messages to infer the schema),
// and returns a source ready to Read. In group mode it joins the group in
// the background. The source must be closed.
func NewSource(cfg Config) (*Source, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	av, err := newAvroValues(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Source{
		avro:      av,
		cfg:       cfg,
		transport: cfg.transport(),
		events:    make(chan event, 1024),
		parts:     map[int]*part{},
		next:      map[int]int64{},
		genSet:    make(chan struct{}),
	}
	s.client = &kafkago.Client{Addr: kafkago.TCP(cfg.Brokers...), Transport: s.transport}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.init(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) init() error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.SampleTimeout)
	defer cancel()
	meta, err := s.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{s.cfg.Topic}})
	if err != nil {
		return fmt.Errorf("source/kafka: topic %q: metadata: %w", s.cfg.Topic, err)
	}
	if len(meta.Topics) != 1 || meta.Topics[0].Error != nil || len(meta.Topics[0].Partitions) == 0 {
		var terr error = errors.New("not found")
		if len(meta.Topics) == 1 && meta.Topics[0].Error != nil {
			terr = meta.Topics[0].Error
		}
		return fmt.Errorf("source/kafka: topic %q: %w", s.cfg.Topic, terr)
	}
	for _, p := range meta.Topics[0].Partitions {
		s.nparts = max(s.nparts, p.ID+1)
	}
	for _, p := range s.cfg.Partitions {
		if p >= s.nparts {
			return fmt.Errorf("source/kafka: topic %q has %d partitions; Config.Partitions names partition %d", s.cfg.Topic, s.nparts, p)
		}
	}
	s.slot = make([]int, s.nparts)
	if len(s.cfg.Partitions) == 0 {
		for p := range s.slot {
			s.slot[p] = p
		}
		s.nslots = s.nparts
	} else {
		for p := range s.slot {
			s.slot[p] = -1
		}
		for i, p := range slices.Sorted(slices.Values(s.cfg.Partitions)) {
			s.slot[p] = i
		}
		s.nslots = len(s.cfg.Partitions)
	}
	first, last, err := s.offsets(ctx)
	if err != nil {
		return err
	}
	if s.cfg.StopAtEnd {
		s.first, s.hwm = first, last
	}

	schema := s.cfg.Schema
	switch {
	case schema != nil:
	case s.avro != nil && s.avro.reg == nil:
		if schema, err = arrowSchemaOf(s.avro.schema); err != nil {
			return fmt.Errorf("source/kafka: Config.AvroSchema: %w", err)
		}
	default:
		sample, err := s.sample(ctx, first, last)
		if err != nil {
			return err
		}
		if len(sample) == 0 {
			return fmt.Errorf("source/kafka: topic %q: no messages to infer a schema from; set Config.Schema", s.cfg.Topic)
		}
		if s.avro == nil {
			schema = inferSchema(sample)
		} else if schema, err = s.avro.inferSchema(ctx, sample); err != nil {
			return fmt.Errorf("source/kafka: topic %q: %w", s.cfg.Topic, err)
		}
	}
	s.values = schema
	timeCol := s.cfg.TimeColumn
	if s.cfg.TimeField != "" {
		timeCol = ""
	}
	if s.dec, err = newDecoder(schema, s.cfg.TimeField, timeCol); err != nil {
		return fmt.Errorf("source/kafka: topic %q: %w", s.cfg.Topic, err)
	}
	s.dec.avro = s.avro
	s.bld = array.NewRecordBuilder(s.cfg.Allocator, s.dec.schema)
	s.dec.bind(s.bld)
	s.schemas = make([]*arrow.Schema, s.nparts)
	for p := range s.schemas {
		md := arrow.NewMetadata([]string{MetadataPartition}, []string{strconv.Itoa(p)})
		s.schemas[p] = arrow.NewSchema(s.dec.schema.Fields(), &md)
	}

	if s.cfg.DeadLetterTopic != "" {
		s.dlq = &kafkago.Writer{
			Addr:         kafkago.TCP(s.cfg.Brokers...),
			Topic:        s.cfg.DeadLetterTopic,
			Balancer:     &kafkago.Murmur2Balancer{},
			RequiredAcks: kafkago.RequireAll,
			BatchTimeout: time.Millisecond,
			Transport:    s.transport,
		}
	}

	if s.cfg.GroupID == "" {
		start := first
		if s.cfg.StartOffset == LastOffset {
			start = last
		}
		for _, p := range s.read() {
			s.next[p] = start[p]
		}
		s.assigned = true
		s.startAll()
		return nil
	}
	s.group, err = kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                s.cfg.GroupID,
		Brokers:           s.cfg.Brokers,
		Dialer:            s.cfg.Dialer,
		Topics:            []string{s.cfg.Topic},
		StartOffset:       s.cfg.StartOffset,
		HeartbeatInterval: s.cfg.HeartbeatInterval,
		SessionTimeout:    s.cfg.SessionTimeout,
		ErrorLogger:       s.logger("consumer group"),
	})
	if err != nil {
		return fmt.Errorf("source/kafka: group %q: %w", s.cfg.GroupID, err)
	}
	s.groupWG.Add(1)
	go s.runGroup()
	return nil
}

func (s *Source) logger(what string) kafkago.Logger {
	return kafkago.LoggerFunc(func(msg string, args ...any) {
		s.cfg.Logger.Warn(fmt.Sprintf(msg, args...), "topic", s.cfg.Topic, "client", what)
	})
}

// read returns the partitions read in direct mode: Config.Partitions, or
// all of them.
func (s *Source) read() []int {
	if len(s.cfg.Partitions) > 0 {
		return slices.Sorted(slices.Values(s.cfg.Partitions))
	}
	out := make([]int, s.nparts)
	for p := range out {
		out[p] = p
	}
	return out
}

// offsets returns the first and the high-water offset of every partition.
func (s *Source) offsets(ctx context.Context) (first, last []int64, err error) {
	reqs := make([]kafkago.OffsetRequest, 0, 2*s.nparts)
	for p := range s.nparts {
		reqs = append(reqs, kafkago.FirstOffsetOf(p), kafkago.LastOffsetOf(p))
	}
	res, err := s.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{
		Topics:         map[string][]kafkago.OffsetRequest{s.cfg.Topic: reqs},
		IsolationLevel: kafkago.ReadCommitted,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("source/kafka: topic %q: list offsets: %w", s.cfg.Topic, err)
	}
	first, last = make([]int64, s.nparts), make([]int64, s.nparts)
	seen := 0
	for _, po := range res.Topics[s.cfg.Topic] {
		if po.Error != nil {
			return nil, nil, fmt.Errorf("source/kafka: topic %q partition %d: list offsets: %w", s.cfg.Topic, po.Partition, po.Error)
		}
		if po.Partition >= 0 && po.Partition < s.nparts {
			first[po.Partition], last[po.Partition] = po.FirstOffset, po.LastOffset
			seen++
		}
	}
	if seen != s.nparts {
		return nil, nil, fmt.Errorf("source/kafka: topic %q: offsets of %d of %d partitions listed", s.cfg.Topic, seen, s.nparts)
	}
	return first, last, nil
}

// sample reads the newest messages of every partition, up to SampleSize in
// all, for schema inference.
func (s *Source) sample(ctx context.Context, first, last []int64) ([][]byte, error) {
	n := len(s.read())
	per := int64((s.cfg.SampleSize + n - 1) / n)
	out := make([][][]byte, s.nparts)
	errs := make([]error, s.nparts)
	var wg sync.WaitGroup
	for _, p := range s.read() {
		from := max(first[p], last[p]-per)
		if from >= last[p] {
			continue
		}
		wg.Go(func() {
			err := s.fetchPartition(ctx, p, from, last[p], func(m kafkago.Message) bool {
				out[p] = append(out[p], m.Value)
				return true
			})
			// Out of time: infer from what arrived.
			if err != nil && (ctx.Err() == nil || s.ctx.Err() != nil) {
				errs[p] = err
			}
		})
	}
	wg.Wait()
	var values [][]byte
	for p := range s.nparts {
		if errs[p] != nil {
			return nil, fmt.Errorf("source/kafka: topic %q partition %d: reading the schema sample: %w", s.cfg.Topic, p, errs[p])
		}
		values = append(values, out[p]...)
	}
	return values, nil
}

// resolve returns the offset the sentinel off (FirstOffset, LastOffset)
// stands for in partition p now; other offsets are returned as they are.
func (s *Source) resolve(ctx context.Context, p int, off int64) (int64, error) {
	if off >= 0 {
		return off, nil
	}
	res, err := s.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{
		Topics:         map[string][]kafkago.OffsetRequest{s.cfg.Topic: {{Partition: p, Timestamp: off}}},
		IsolationLevel: kafkago.ReadCommitted,
	})
	if err != nil {
		return 0, fmt.Errorf("list offsets: %w", err)
	}
	for _, po := range res.Topics[s.cfg.Topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return 0, fmt.Errorf("list offsets: %w", po.Error)
		}
		if off == FirstOffset {
			return po.FirstOffset, nil
		}
		return po.LastOffset, nil
	}
	return 0, errors.New("list offsets: the partition is not in the response")
}

// fetcher reads one partition into the events channel from a goroutine.
type fetcher struct {
	part   int
	cancel context.CancelFunc
	done   chan struct{}
}

// fetchHook, when set (by tests only, before a source is opened), is
// called by a partition's reader goroutine before it reads.
var fetchHook atomic.Pointer[func(partition int)]

// startFetcher starts reading partition p at offset from; with end >= 0
// it stops after the message before end.
func (s *Source) startFetcher(p int, from, end int64) *fetcher {
	ctx, cancel := context.WithCancel(s.ctx)
	f := &fetcher{part: p, cancel: cancel, done: make(chan struct{})}
	send := func(ev event) bool {
		ev.f = f
		select {
		case s.events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fetch := func() (err error) {
		// A panic here (a broker answer the protocol layer trips over)
		// ends the source with an error, not the process.
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error reading the partition: %v", r)
			}
		}()
		if h := fetchHook.Load(); h != nil {
			(*h)(p)
		}
		from, err := s.resolve(ctx, p, from)
		if err == nil {
			err = s.fetchPartition(ctx, p, from, end, func(m kafkago.Message) bool {
				return send(event{msg: m})
			})
		}
		return err
	}
	go func() {
		defer close(f.done)
		err := fetch()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			send(event{err: err})
		case end >= 0:
			send(event{end: true})
		}
	}()
	return f
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// startPart (re)starts reading partition p at s.next[p], or at the
// sentinel offset from when the position is not known.
func (s *Source) startPart(p int, from int64) {
	if old := s.parts[p]; old != nil && old.f != nil {
		old.f.stop()
	}
	if n, ok := s.next[p]; ok {
		from = n
	}
	end := int64(-1)
	if s.hwm != nil {
		// Resolve the sentinels, so that a partition with nothing to read
		// is at its end at once.
		end = s.hwm[p]
		switch from {
		case LastOffset:
			from = end
		case FirstOffset:
			from = s.first[p]
		}
	}
	s.parts[p] = &part{id: p, f: s.startFetcher(p, from, end)}
	s.publishAssigned()
}

// publishAssigned makes the partitions being read what Assigned returns.
func (s *Source) publishAssigned() {
	a := slices.Sorted(maps.Keys(s.parts))
	s.assignedNow.Store(&a)
}

func (s *Source) startAll() {
	for _, p := range s.read() {
		s.startPart(p, s.cfg.StartOffset)
	}
}

func (s *Source) stopAll() {
	for p, pt := range s.parts {
		if pt.f != nil {
			pt.f.stop()
		}
		delete(s.parts, p)
	}
	s.publishAssigned()
}

// runGroup follows the group's generations, telling Read about each.
func (s *Source) runGroup() {
	defer s.groupWG.Done()
	defer func() {
		// A panic in the group protocol ends the source with an error,
		// not the process.
		if r := recover(); r != nil {
			select {
			case s.events <- event{err: fmt.Errorf("internal error in the consumer group: %v", r)}:
			case <-s.ctx.Done():
			}
		}
	}()
	for {
		gen, err := s.group.Next(s.ctx)
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, kafkago.ErrGroupClosed) {
				return
			}
			s.cfg.Logger.Warn("source/kafka: joining the consumer group failed; retrying", "topic", s.cfg.Topic, "group", s.cfg.GroupID, "err", err)
			continue
		}
		a := &assignment{generation: gen.ID, offsets: map[int]int64{}}
		for _, pa := range gen.Assignments[s.cfg.Topic] {
			off := pa.Offset
			if off < 0 {
				// No committed offset: StartOffset names where the
				// partition starts. Resolve it now, so that Position
				// holds the partition from its assignment on and a
				// restore replays from this very offset, not from the
				// end of the partition at the time of the restore.
				r, err := s.resolve(s.ctx, pa.ID, off)
				if err != nil {
					s.cfg.Logger.Warn("source/kafka: resolving the start offset of an assigned partition failed; the partition reader resolves it", "topic", s.cfg.Topic, "partition", pa.ID, "err", err)
				} else {
					off = r
				}
			}
			a.offsets[pa.ID] = off
		}
		s.mu.Lock()
		s.gen = gen
		close(s.genSet)
		s.genSet = make(chan struct{})
		s.mu.Unlock()
		ended := make(chan struct{})
		gen.Start(func(ctx context.Context) {
			<-ctx.Done()
			close(ended)
		})
		select {
		case s.events <- event{assign: a}:
		case <-s.ctx.Done():
			return
		}
		select {
		case <-ended:
		case <-s.ctx.Done():
			return
		}
		s.mu.Lock()
		s.gen = nil
		s.mu.Unlock()
		select {
		case s.events <- event{revoke: true}:
		case <-s.ctx.Done():
			return
		}
	}
}

// Schema returns the schema of the batches: the JSON fields, plus the
// message-timestamp column when Config.TimeField is empty.
func (s *Source) Schema() *arrow.Schema { return s.dec.schema }

// ValueSchema returns the schema of the JSON values: Config.Schema, or
// the schema inferred from the sample. Given as Config.Schema to another
// source of the topic, it makes that source's Schema equal this one's.
func (s *Source) ValueSchema() *arrow.Schema { return s.values }

// TimeColumn returns the name of the event-time column.
func (s *Source) TimeColumn() string { return s.dec.cols[s.dec.timeCol].Name() }

// Partitions returns the number of partitions the source reads, each
// with a watermark of its own in the engine (source.Partitioned): the
// topic's partitions (TopicPartitions), or with Config.Partitions the
// number of partitions named there, so that the topic's other partitions,
// which this source never reads, do not hold its watermark back.
func (s *Source) Partitions() int { return s.nslots }

// Reading implements source.Assigning: whether the source reads
// partition p (a place in [0, Partitions()), as PartitionOf gives) at the
// moment: every partition without a GroupID; with one, the partitions the
// group assigned to this member in the generation Read last saw. The
// engine then keeps no watermark waiting for partitions other members
// read. Call it from the goroutine that calls Read.
func (s *Source) Reading(p int) bool {
	if s.cfg.GroupID == "" {
		return true
	}
	_, ok := s.parts[p] // with a group, places are partitions
	return ok
}

// TopicPartitions returns the number of partitions of the topic.
func (s *Source) TopicPartitions() int { return s.nparts }

// PartitionOf returns the place in [0, Partitions()) of the partition of
// a batch returned by Read (or of a slice of one), or -1 for a batch that
// did not come from this source: its Kafka partition (PartitionID), or
// with Config.Partitions that partition's index among the partitions
// named there, in ascending order.
func (s *Source) PartitionOf(rec arrow.RecordBatch) int {
	p := s.PartitionID(rec)
	if p < 0 {
		return -1
	}
	return s.slot[p]
}

// PartitionID returns the Kafka partition of a batch returned by Read (or
// of a slice of one), read from its schema metadata (MetadataPartition),
// or -1 for a batch that did not come from a Kafka source of the topic.
func (s *Source) PartitionID(rec arrow.RecordBatch) int {
	if rec == nil {
		return -1
	}
	md := rec.Schema().Metadata()
	i := md.FindKey(MetadataPartition)
	if i < 0 {
		return -1
	}
	p, err := strconv.Atoi(md.Values()[i])
	if err != nil || p < 0 || p >= s.nparts {
		return -1
	}
	return p
}

// Assigned returns the partitions being read, ascending: all of them
// without a group; with one, those the group assigned to this member in
// the generation Read last saw (none during a rebalance). It may be
// called from any goroutine.
func (s *Source) Assigned() []int {
	if a := s.assignedNow.Load(); a != nil {
		return slices.Clone(*a)
	}
	return nil
}

// DeadLetters returns how many messages could not be decoded so far.
func (s *Source) DeadLetters() int64 { return s.dead.Load() }

// Read returns the next batch: rows of one partition, in offset order, at
// most Config.BatchSize of them, returned once the batch is full or its
// first row has waited Config.MaxWait. It blocks until there is one, ctx
// is done (ctx.Err()), or — with Config.StopAtEnd — every partition is
// read to its end (io.EOF); after Config.IdleWake without one it returns
// an empty batch. The caller releases the batch.
func (s *Source) Read(ctx context.Context) (rec arrow.RecordBatch, err error) {
	if s.closed {
		return nil, ErrClosed
	}
	defer func() {
		if r := recover(); r != nil {
			rec, err = nil, fmt.Errorf("source/kafka: topic %q: internal error: %v", s.cfg.Topic, r)
		}
	}()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.fatal != nil {
			return nil, s.fatal
		}
		now := time.Now()
		pt, wait := s.ready(now)
		if pt == nil && !(s.cfg.StopAtEnd && s.finished()) && s.cfg.IdleWake > 0 {
			wake := s.cfg.IdleWake - now.Sub(start)
			if wake <= 0 {
				return s.emptyBatch(), nil
			}
			if wait == 0 || wake < wait {
				wait = wake
			}
		}
		if pt != nil {
			rec, err := s.flush(ctx, pt)
			if err != nil || rec != nil {
				return rec, err
			}
			continue
		} else if s.cfg.StopAtEnd && s.finished() {
			return nil, io.EOF
		} else if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
		}
		var tick <-chan time.Time
		if timer != nil {
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev := <-s.events:
			s.handle(ev)
			// Take what else is waiting, so batches fill up.
		drain:
			for range s.cfg.BatchSize {
				select {
				case ev := <-s.events:
					s.handle(ev)
				default:
					break drain
				}
			}
		case <-tick:
			timer = nil
		}
	}
}

// emptyBatch is the batch of no rows Read returns after Config.IdleWake.
func (s *Source) emptyBatch() arrow.RecordBatch {
	sc := s.Schema()
	cols := make([]arrow.Array, sc.NumFields())
	for i, f := range sc.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	rec := array.NewRecordBatch(sc, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// ready returns the partition whose batch is due (full, waited MaxWait, or
// at its end), the one waiting longest first; otherwise how long until
// the next one is due (0: none buffered).
func (s *Source) ready(now time.Time) (*part, time.Duration) {
	var (
		best *part
		wait time.Duration
	)
	for _, pt := range s.parts {
		if len(pt.buf) == 0 {
			continue
		}
		due := len(pt.buf) >= s.cfg.BatchSize || pt.done
		left := s.cfg.MaxWait - now.Sub(pt.since)
		if due || left <= 0 {
			if best == nil || pt.since.Before(best.since) {
				best = pt
			}
			continue
		}
		if wait == 0 || left < wait {
			wait = left
		}
	}
	return best, wait
}

// finished reports whether every partition read is at its end.
func (s *Source) finished() bool {
	if !s.assigned {
		return false
	}
	for _, pt := range s.parts {
		if !pt.done || len(pt.buf) > 0 {
			return false
		}
	}
	return true
}

func (s *Source) handle(ev event) {
	switch {
	case ev.assign != nil:
		s.stopAll()
		for p := range s.next {
			if _, ok := ev.assign.offsets[p]; !ok {
				delete(s.next, p)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(ev.assign.offsets)) {
			if p < 0 || p >= s.nparts {
				continue
			}
			off := ev.assign.offsets[p]
			if off >= 0 {
				if _, ok := s.next[p]; !ok {
					s.next[p] = off
				}
			}
			s.startPart(p, off)
		}
		s.assigned = true
		return
	case ev.revoke:
		s.stopAll()
		s.assigned = false
		return
	case ev.f == nil:
		if ev.err != nil {
			s.fatal = fmt.Errorf("source/kafka: topic %q group %q: %w", s.cfg.Topic, s.cfg.GroupID, ev.err)
		}
		return
	}
	pt := s.parts[ev.f.part]
	if pt == nil || pt.f != ev.f {
		return // from a fetcher stopped since
	}
	switch {
	case ev.err != nil:
		s.fatal = fmt.Errorf("source/kafka: topic %q partition %d: %w", s.cfg.Topic, pt.id, ev.err)
	case ev.end:
		pt.done = true
	default:
		if len(pt.buf) == 0 {
			pt.since = time.Now()
		}
		pt.buf = append(pt.buf, ev.msg)
	}
}

// flush decodes up to BatchSize buffered messages of pt into a batch. It
// returns nil, nil when every one of them was a dead letter.
func (s *Source) flush(ctx context.Context, pt *part) (arrow.RecordBatch, error) {
	msgs := pt.buf[:min(len(pt.buf), s.cfg.BatchSize)]
	if s.avro != nil {
		values := make([][]byte, len(msgs))
		for i, m := range msgs {
			values[i] = m.Value
		}
		if err := s.avro.resolve(ctx, values); err != nil {
			return nil, fmt.Errorf("source/kafka: topic %q partition %d: %w", s.cfg.Topic, pt.id, err) // nothing consumed
		}
	}
	var dead []source.DeadLetter
	var deadMsgs []kafkago.Message
	rows := 0
	for _, m := range msgs {
		if err := s.dec.decode(m.Value, m.Time); err != nil {
			dead = append(dead, source.DeadLetter{
				Source: s.cfg.Topic + "/" + strconv.Itoa(pt.id),
				Offset: m.Offset,
				Raw:    m.Value,
				Reason: err.Error(),
			})
			deadMsgs = append(deadMsgs, m)
			continue
		}
		rows++
	}
	built := s.bld.NewRecordBatch()
	if len(deadMsgs) > 0 && s.dlq != nil {
		if err := s.writeDeadLetters(ctx, deadMsgs, dead); err != nil {
			built.Release()
			return nil, err // nothing consumed: the next Read tries again
		}
	}
	for _, d := range dead {
		s.dead.Add(1)
		if s.cfg.DeadLetter != nil {
			s.cfg.DeadLetter(d)
		}
	}
	s.next[pt.id] = msgs[len(msgs)-1].Offset + 1
	clear(pt.buf[:len(msgs)])
	pt.buf = pt.buf[len(msgs):]
	if len(pt.buf) > 0 {
		pt.since = time.Now()
	} else {
		pt.buf = nil
	}
	if rows == 0 {
		built.Release()
		return nil, nil
	}
	defer built.Release()
	return array.NewRecordBatch(s.schemas[pt.id], built.Columns(), int64(rows)), nil
}

func (s *Source) writeDeadLetters(ctx context.Context, msgs []kafkago.Message, dead []source.DeadLetter) error {
	out := make([]kafkago.Message, len(msgs))
	for i, m := range msgs {
		h := slices.Clone(m.Headers)
		h = append(h,
			kafkago.Header{Key: "volga-dead-letter-reason", Value: []byte(dead[i].Reason)},
			kafkago.Header{Key: "volga-dead-letter-topic", Value: []byte(s.cfg.Topic)},
			kafkago.Header{Key: "volga-dead-letter-partition", Value: strconv.AppendInt(nil, int64(m.Partition), 10)},
			kafkago.Header{Key: "volga-dead-letter-offset", Value: strconv.AppendInt(nil, m.Offset, 10)},
		)
		out[i] = kafkago.Message{Key: m.Key, Value: m.Value, Headers: h, Time: m.Time}
	}
	if err := s.dlq.WriteMessages(ctx, out...); err != nil {
		return fmt.Errorf("source/kafka: writing %d dead letters to topic %q: %w", len(out), s.cfg.DeadLetterTopic, err)
	}
	return nil
}

// Position returns the next offset to read of every partition being read
// (all partitions in direct mode; in group mode those assigned to this
// member whose position is known), encoded for a checkpoint. Offsets of
// messages fetched but not yet returned by Read are not included: the
// position is exactly what Read has delivered.
func (s *Source) Position() ([]byte, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return encodePosition(s.cfg.Topic, s.next), nil
}

// Seek restores a position returned by Position: the next Read returns
// the messages that followed it. Partitions missing from pos keep theirs.
// Messages fetched but not yet returned are dropped. With
// Config.Partitions, offsets of other partitions are ignored. In group mode the
// offsets apply to the partitions this member is (or will be) assigned;
// other members are not affected.
func (s *Source) Seek(pos []byte) error {
	if s.closed {
		return ErrClosed
	}
	next, err := decodePosition(s.cfg.Topic, pos)
	if err != nil {
		return err
	}
	for p := range next {
		if p >= s.nparts {
			return fmt.Errorf("%w: partition %d, topic %q has %d", errPosition, p, s.cfg.Topic, s.nparts)
		}
	}
	if len(s.cfg.Partitions) > 0 {
		// Only the partitions this source reads.
		for p := range next {
			if !slices.Contains(s.cfg.Partitions, p) {
				delete(next, p)
			}
		}
	}
	for p, off := range next {
		s.next[p] = off
	}
	s.fatal = nil
	for p := range next {
		if s.parts[p] != nil {
			s.startPart(p, s.cfg.StartOffset) // at s.next[p]
		}
	}
	return nil
}

// Commit stores the offsets of pos (a Position) in the consumer group, so
// that a member that takes a partition over (or this one after a restart)
// resumes there. Only partitions currently assigned to this member are
// committed. The engine calls it when the checkpoint holding pos is
// complete. If no generation is active (during a rebalance), Commit waits
// for one until ctx is done. It is safe to call concurrently with Read.
func (s *Source) Commit(ctx context.Context, pos []byte) error {
	if s.cfg.GroupID == "" {
		return ErrNoGroup
	}
	next, err := decodePosition(s.cfg.Topic, pos)
	if err != nil {
		return err
	}
	for {
		s.mu.Lock()
		gen, wait := s.gen, s.genSet
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		if gen == nil {
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return fmt.Errorf("source/kafka: group %q: commit: no active generation: %w", s.cfg.GroupID, ctx.Err())
			case <-s.ctx.Done():
				return ErrClosed
			}
		}
		offsets := map[int]int64{}
		for _, pa := range gen.Assignments[s.cfg.Topic] {
			if o, ok := next[pa.ID]; ok {
				offsets[pa.ID] = o
			}
		}
		if len(offsets) == 0 {
			return nil
		}
		if err := gen.CommitOffsets(map[string]map[int]int64{s.cfg.Topic: offsets}); err != nil {
			return fmt.Errorf("source/kafka: group %q: commit: %w", s.cfg.GroupID, err)
		}
		return nil
	}
}

// Close stops reading, leaves the group and waits for every goroutine the
// source started. Closing twice is a no-op.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	var err error
	if s.group != nil {
		err = s.group.Close()
		s.groupWG.Wait()
	}
	s.stopAll()
	if s.dlq != nil {
		if e := s.dlq.Close(); e != nil && err == nil {
			err = e
		}
	}
	if s.bld != nil {
		s.bld.Release()
	}
	s.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("source/kafka: close: %w", err)
	}
	return nil
}

var (
	_ source.Source      = (*Source)(nil)
	_ source.Seeker      = (*Source)(nil)
	_ source.Partitioned = (*Source)(nil)
)
