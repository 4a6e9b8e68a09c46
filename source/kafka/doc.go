// Package kafka reads a Kafka topic of JSON or Avro messages as Arrow record
// batches: a source.Source for streaming pipelines, built on
// github.com/segmentio/kafka-go.
//
// # Reading
//
// NewSource reads every partition of Config.Topic. Without a GroupID each
// partition is read directly from Config.StartOffset (or from a position
// given to Seek); with a GroupID the consumer group assigns partitions to
// the processes sharing it (Kafka Streams-style scale-out) and a partition
// starts at the group's committed offset. Config.Partitions reads chosen
// partitions directly instead: volga.Group, which shards window state by
// partition, gives each partition it is assigned a source of its own.
//
// Each message value is one JSON object. The schema is Config.Schema or is
// inferred from a sample of the newest messages with the rules of the
// JSON-lines source (integers int64, other numbers float64, true/false
// bool, date-time strings timestamp[ms], everything else string). Event
// time comes from the JSON field Config.TimeField or, when that is empty,
// from the message timestamp, in a timestamp[ms] column named
// Config.TimeColumn (default "event_time").
//
// With Config.Format "avro", each value is an Avro record instead:
// framed with the id of its writer's schema in a Confluent-compatible
// schema registry (Config.SchemaRegistry; each schema is fetched once, and
// a topic whose schema evolves reads on, fields matched to columns by
// name), or bare, of one schema (Config.AvroSchema). Without
// Config.Schema the columns are those of the newest writer's schema in
// the sample. A registry that cannot be reached fails Read without
// consuming anything, so no message is lost to an outage.
//
// Partitions are read with isolation level read_committed, as a Java
// consumer configured so reads them (kafka-go's Reader does not filter
// transactions, so the source fetches with its protocol layer): the
// messages of aborted transactions are skipped, the control records that
// end transactions are not messages, and a partition is read up to its
// last stable offset. A position too old for the partition (deleted by
// retention) or past its end is an error of Read naming the offset and
// the offsets the partition holds; no offset is skipped silently.
//
// Read returns batches of at most Config.BatchSize rows, flushed after
// Config.MaxWait so that a quiet topic still makes progress. The source is
// unbounded: Read never returns io.EOF, unless Config.StopAtEnd makes it
// stop at the high-water marks the partitions had at the start (tests,
// backfills, bounded replays).
//
// # Partitions and watermarks
//
// Every batch holds rows of one partition: the source implements
// source.Partitioned, and PartitionID tells a batch's partition (recorded
// in its schema metadata under MetadataPartition). The engine keeps one
// watermark per partition read and combines them by minimum, idle
// partitions aside (watermark.Combiner), so that a partition behind the
// others does not make their rows late. A source of some partitions
// (Config.Partitions) counts only those; one in a consumer group counts
// the partitions the group assigned it at the moment (it implements
// source.Assigning), so the partitions other members read do not hold
// its watermark back.
//
// # Positions, checkpoints and commits
//
// The source implements source.Seeker: Position encodes the next offset
// to read of each partition — exactly the messages Read has returned so
// far, never those merely fetched — and Seek restores it, so a checkpoint
// replays precisely. With a consumer group, Commit stores a position's
// offsets in the group once the checkpoint holding it is complete; a
// restarted or new member then resumes there.
//
// # Dead letters
//
// A message that does not decode (no value: a tombstone; invalid JSON or
// invalid UTF-8; not an object; Avro not framed, of a schema id the
// registry lacks, or cut short; a value of the wrong type for its field;
// no event time) does not stop the source:
// it is counted (DeadLetters), handed to Config.DeadLetter as a
// source.DeadLetter with Source "topic/partition", the message offset and
// the reason, optionally copied to Config.DeadLetterTopic, and reading
// goes on.
package kafka
