// Command volga runs Volga feature pipelines from the command line.
//
// Usage:
//
//	volga <command> [arguments]
//
// The commands are:
//
//	run      run one SQL pipeline over CSV, JSON-lines or Parquet files
//	serve    ingest a file with one SQL pipeline and serve point-in-time lookups over HTTP
//	group    run one SQL pipeline as a member of a Kafka consumer group, partitions handed over through checkpoints
//	backfill compute point-in-time training data: the features of each spine row as of its time
//	check    check logged lookups against features recomputed offline
//	help     show help for volga or for one command
//	version  print the version of volga and of Go it was built with
//
// # volga run
//
//	volga run --sql FILE --source NAME=PATH [--source ...] [--schema COL:TYPE,...]
//	          [--mode batch|stream]
//	          [--time-order DURATION] [--clustered-by COLS | --cluster-input COLS]
//	          [--max-out-of-order DURATION]
//	          [--watermark-interval DURATION [--watermark-max-rows N]]
//	          [--idle-timeout DURATION] [--parallelism N] [--sink PATH]
//	          [--checkpoints URL [--checkpoint-interval DURATION]]
//	          [--state-dir DIR] [--memory-budget BYTES] [--row-pages ROWS]
//
// The query in FILE ("-" reads it from standard input) is one SELECT of the
// Volga SQL dialect over one table; --source binds that table's name to a
// file, whose format follows its extension (.csv, .jsonl, .ndjson, .json,
// .parquet) and whose schema is inferred from its first rows, or to a
// directory or glob pattern ('events/*.csv') of files of one format, read
// in name order with the schema of the first (CSV and JSON-lines files
// may be compressed: .csv.gz, .jsonl.zst). Output goes to
// the --sink file, CSV or JSON lines after its extension (.csv, .jsonl,
// .ndjson, .parquet; .csv.gz or .jsonl.zst compress the text with gzip or
// zstd), or as CSV to standard output when --sink is "-" or absent
// (--format jsonl changes that).
//
// A source may also be in object storage, s3://BUCKET/KEY?params (an
// object, a prefix ending in "/", or a glob pattern of objects; the
// parameters are gocloud.dev's s3blob's, such as region and endpoint,
// credentials come from the AWS environment).
//
// A source or sink may also be a Kafka topic,
// kafka://HOST:PORT[,HOST:PORT...]/TOPIC?params (JSON messages, or Avro
// as a source with format=avro and schema_registry=URL or
// avro_schema=FILE.avsc): source
// parameters group, time_field or time_column, start, stop_at_end,
// batch_size, max_wait, dead_letter_topic; sink parameters key and id. A
// cluster that wants TLS takes tls=true (tls_ca=FILE for a private
// authority, tls_cert=FILE and tls_key=FILE for a client certificate,
// tls_insecure=true to skip verification), and one that wants SASL takes
// sasl=plain, scram-sha-256 or scram-sha-512 with the user and password in
// the URL (kafka://USER:PASSWORD@HOST:PORT/TOPIC) or the user there and
// the password in the environment variable VOLGA_KAFKA_PASSWORD;
// client_id names the client. Messages show the URL with its password
// hidden.
//
// For example, the spend of each user over the last hour, for every
// transaction:
//
//	$ cat spend.sql
//	SELECT user_id, ts, amount, sum(amount) OVER w AS spend_1h
//	FROM tx
//	WINDOW w AS (PARTITION BY user_id ORDER BY ts
//	             RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)
//	$ volga run --sql spend.sql --source tx=tx.csv --sink features.csv
//
// Records of a CSV or JSON-lines source that cannot be decoded (a wrong
// number of fields, a value of the wrong type) are skipped: each is reported
// on standard error as
//
//	volga: dead letter: tx.csv:17: wrong number of fields: got 2, want 4
//
// and a summary line follows at the end of the run. The column types are
// inferred from the first 1000 rows, so a malformed value among them (5x in
// a column of numbers, a time without seconds) makes its column text, and
// the query then fails on that column's type; --schema gives the types
// instead, and such a value is a dead letter like any other:
//
//	$ volga run --sql spend.sql --source tx=tx.csv --schema user_id:bigint,ts:timestamp,amount:double
//
// (types bigint, double, varchar, boolean, timestamp, date; serve, backfill,
// check and group take --schema too, for their --source).
//
// In batch mode (the default) every row gets its output row, in input
// order. Rows of OVER windows go out, and their memory is freed, as soon as
// no row still to come can precede them in event time: a Parquet file's
// row-group statistics tell; for a CSV or JSON-lines file, --time-order
// DURATION promises that each row is at most DURATION behind the newest
// event time before it (0s: sorted), and a row that breaks the promise
// stops the run. An input sorted or clustered by key instead (all rows of
// a user before the next user's, as training-set exports often are) is
// promised so with --clustered-by user_id: each key's rows go out, and its
// state is freed, once the input has moved on to the next key (for a query
// of GROUP BY windows only, each key's windows, key by key); a key that
// comes back stops the run. --cluster-input user_id orders an input in
// any order by user first (reading it whole, into memory up to 1 GiB and
// spilled beyond to the temporary directory) and then runs
// the same way, the output coming user by user: for long frames with
// large per-key state, memory then holds the input rather than every
// user's windows. Without any of these, the rows wait for the end
// of the input.
//
// In stream mode, rows
// that arrive more than --max-out-of-order behind the newest event time are
// late: they are not emitted, and a summary line counts them (--late-sink
// writes them to a file, --allowed-lateness applies them anyway).
// --watermark-interval 100ms advances the watermark at most ten times a
// second: rows come out up to 100 ms later, in larger steps, which with many
// keys costs much less CPU per row. A step holds at most
// --watermark-max-rows rows read (default 131072; -1 for no bound): a
// backlog read faster than it is processed is released every that many
// rows rather than piling up for the whole interval. Over a Kafka topic
// the watermark is the minimum of the partitions'; --idle-timeout 30s lets
// a partition that has delivered nothing for 30 s stop holding it back, so
// that an empty or quiet partition does not hold the output.
//
// # Checkpoints and state
//
// With --checkpoints URL, run and serve take a consistent checkpoint of the
// pipeline's state and of the input position every --checkpoint-interval
// (default 10s) into a bucket: file:///DIR (or just a directory path,
// created when missing), s3://BUCKET?region=REGION (also endpoint=,
// use_path_style=true and disable_https=true for S3-compatible stores; a
// path, s3://BUCKET/PATH, is a prefix in the bucket) or
// mem:// (within the process only). Started again with the same URL, query,
// input and --parallelism, after a crash or an interrupt, the command
// resumes from the latest complete checkpoint; --log-level info logs
//
//	level=INFO msg="volga: resuming from checkpoint" pipeline=volga epoch=12 ...
//
// The CSV, JSON-lines and Parquet file outputs of run are then
// exactly-once: rows are staged next to the output file (in .NAME.volga)
// and appended to it only once their checkpoint is complete, so after any
// crash and restart the file equals the output of a run without one (a
// Parquet file appears whole at the end).
// Standard output and Kafka see again the rows that followed the checkpoint
// (at least once). A bounded input ends with a checkpoint: started again
// after it finished, the command reads nothing twice (serve restores its
// state and serves at once). Use one URL per pipeline.
//
// The state lives in a Badger store in --state-dir (emptied at start; by
// default a temporary directory); --memory-budget BYTES (512MiB, 2GB,
// 1000000) bounds the window state kept in memory, the least recently used
// keys going to the store. Without it all state stays in memory.
// --row-pages ROWS bounds each key's memory whatever the length of its
// longest RANGE frame: the rows of that frame no frame edge needs go to
// the store in pages of ROWS rows and come back when the frame's lower
// edge reaches them (it refuses an allowed lateness or lookup retention).
//
// # volga serve
//
//	volga serve --sql FILE --source NAME=PATH [--listen ADDR] [--mode batch|stream]
//	            [--time-order DURATION] [--max-out-of-order DURATION]
//	            [--watermark-interval DURATION [--watermark-max-rows N]]
//	            [--idle-timeout DURATION] [--parallelism N] [--max-body BYTES]
//	            [--checkpoints URL [--checkpoint-interval DURATION]]
//	            [--state-dir DIR] [--memory-budget BYTES] [--row-pages ROWS]
//
// Ingests the bound file to its end, logs "volga: ingested N rows, serving
// on ADDR" (--listen, default localhost:8080) on standard error, then serves POST /v1/features, GET /healthz
// (package request documents the JSON), GET /readyz and GET /metrics. It
// listens from the start: while it ingests, /healthz and /metrics answer,
// and lookups and /readyz answer 503 until the file is read. A Kafka topic
// in stream mode, which never ends, is served while it is read: lookups
// and /readyz answer 503 until the pipeline has started, then lookups
// answer as of its watermark. SIGINT or
// SIGTERM stops the pipeline, then shuts the server down gracefully,
// letting requests in flight finish (for up to 10s), with exit status 0.
// The server drops a client that takes over a minute to send its request,
// over two to read the answer, or leaves its connection idle for two.
// --time-order promises the order of a CSV or JSON-lines input as for
// volga run.
//
// # volga group
//
//	volga group --sql FILE --source NAME=kafka://HOST:PORT/TOPIC?group=G&time_field=ts
//	            --checkpoints URL [--sink PATH] [--listen ADDR [--advertise URL]]
//	            [--key-encoding json|raw] [--balancer murmur2|hash]
//	            [--max-out-of-order DURATION] [--allowed-lateness DURATION]
//	            [--late-sink PATH] [--parallelism N] ...
//
// Scale-out without a cluster manager: start the same command on several
// machines and they share the topic's partitions as members of consumer
// group G (volga.Group). Each member runs the query in stream mode over
// each partition the group assigns it, checkpointed under the partition's
// prefix (p0003/) of the --checkpoints bucket, which all members share (an
// s3:// bucket, or a directory on a shared file system). On a rebalance
// (a member joins, leaves or crashes) the partitions move with their state:
// the old owner stops them with a final checkpoint, the new one restores it
// and reads on from the checkpointed offset. A member the group dropped
// while it still ran (paused past its session timeout) writes no
// checkpoint and publishes no output once the group went on without it,
// then rejoins. --sink writes each partition's
// output to a file of its own, PATH with {partition} replaced by its
// four-digit number (exactly-once, as for volga run with --checkpoints), or
// to a Kafka topic; --late-sink does the same for the late rows dropped. With --listen the member serves lookups of the keys of
// its partitions and answers the others with 421 Misdirected Request naming
// their owner's --advertise URL, which --key-encoding and --balancer (how
// the producers key and place messages) let it find; GET /metrics shows a
// pipeline per partition it runs (volga-p0003). SIGINT or SIGTERM leaves
// the group with final checkpoints, exit status 0.
//
// # volga backfill
//
//	volga backfill --sql FILE --source NAME=PATH --spine PATH [--sink PATH | --format csv|jsonl]
//	               [--strict] [--time-order DURATION] [--parallelism N]
//
// For each row of the spine file (the query's key columns and time column,
// plus labels), the features as of that row's time: one output row per
// spine row, in spine order, the spine's columns first. --strict counts
// only events strictly before the row's time. Events and spine in time
// order (Parquet files, whose statistics say so; CSV or JSON lines promised
// with --time-order DURATION, as for volga run) are read side by side, and
// training rows go out as they are read, in memory bounded by the windows;
// otherwise the events are read first and held until the spine is.
//
// # volga check
//
//	volga check --sql FILE --source NAME=PATH --log PATH [--tolerance X]
//	            [--abs-tolerance X] [--examples N] [--time-order DURATION]
//
// Recomputes logged lookups (responses of volga serve, one per line) with
// a backfill and prints how many feature values match; exit status 1 when
// any differs (values of lookups served with a watermark earlier than
// their time are reported as unsettled, not as differences). Numbers match
// within --tolerance relative difference (default 1e-9; 0: exactly) or
// --abs-tolerance absolute difference (default 0), integers exactly. A
// log line that is not a lookup (malformed JSON, a line cut short, a logged
// error response) is reported as a dead letter and skipped; the others are
// checked, and the exit status is 1.
//
// # Exit status
//
// volga exits with 0 on success, 2 when the command line itself is wrong (an
// unknown command or flag, a missing --sql or --source, a bad duration,
// mode, size or bucket URL), 1 when the run fails (a query error, an
// unbound table, an unreadable file, a failing sink) and 130 when
// interrupted by SIGINT or SIGTERM: a batch run is cancelled, a stream run
// or a run with --checkpoints stops gracefully (every row read emitted, a
// final checkpoint taken) and says so, but its input was not read to its
// end. A run or backfill that fails, or a batch run interrupted without
// --checkpoints, leaves a .csv, .jsonl or .parquet --sink file as it was
// before (or does not create it): it never leaves an empty or partial
// file in its place. serve and group, which run until stopped, exit 0 on those signals
// (serve stopped while it still ingests a file exits 130 too: it never
// served).
// Errors are one line on standard error starting with "volga: ";
// query errors keep their line and column in the query file.
package main
