package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/volga-go/volga/sink"
	kafkasink "github.com/volga-go/volga/sink/kafka"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
)

// Inputs and outputs are files (by extension) or Kafka topics:
//
//	kafka://HOST:PORT[,HOST:PORT...]/TOPIC?group=G&format=json&time_field=ts
//	kafka://HOST:PORT/TOPIC?key=user_id          (as a sink)
//
// Source parameters: group (consumer group; without it every partition is
// read from its start), format (json, or avro with schema_registry=URL
// for values framed with a registry's schema id, or avro_schema=FILE for
// bare values of the schema in FILE), time_field (a message
// field holding event time) or time_column (the name of the column holding
// the message timestamp, default event_time), start (first|last),
// batch_size, max_wait (a duration), stop_at_end (true|false: read up to
// the end offsets seen at start; the default in batch mode, backfill and
// check), dead_letter_topic. Sink parameters: key (comma-separated key
// columns: a key's rows land in one partition), id (columns giving each
// row a stable identity header).
//
// Connection parameters, for sources and sinks alike (kafkaDialer): tls
// (true: TLS, verified against the system's roots), tls_ca (a PEM file
// of the roots to verify against), tls_cert and tls_key (PEM files of a
// client certificate), tls_insecure (true: no verification, for tests),
// sasl (plain, scram-sha-256 or scram-sha-512, with the user and password
// of the URL, kafka://USER:PASSWORD@HOST:PORT/TOPIC, or the password in
// the environment variable VOLGA_KAFKA_PASSWORD), client_id.

const kafkaScheme = "kafka://"

func isKafka(path string) bool { return strings.HasPrefix(path, kafkaScheme) }

// kafkaURL splits a kafka:// URL. The connection parameters (TLS, SASL,
// client ID) make the dialer, nil when there are none, and are taken out
// of q.
func kafkaURL(raw string) (brokers []string, topic string, q url.Values, dialer *kafkago.Dialer, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", nil, nil, usagef("bad Kafka URL %q: %v", redactURL(raw), redactErr(err))
	}
	shown := redactURL(raw)
	topic = strings.Trim(u.Path, "/")
	if u.Host == "" || topic == "" || strings.Contains(topic, "/") {
		return nil, "", nil, nil, usagef("bad Kafka URL %q: want kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?params]", shown)
	}
	q = u.Query()
	if dialer, err = kafkaDialer(shown, u.User, q); err != nil {
		return nil, "", nil, nil, err
	}
	return strings.Split(u.Host, ","), topic, q, dialer, nil
}

// kafkaPasswordEnv names the environment variable holding the SASL
// password when a kafka:// URL's user has none.
const kafkaPasswordEnv = "VOLGA_KAFKA_PASSWORD"

// kafkaDialer makes the dialer of a Kafka URL's connection parameters
// (see the top of this file), nil when it has none, and deletes them from
// q. shown is the URL as errors show it, its password hidden.
func kafkaDialer(shown string, user *url.Userinfo, q url.Values) (*kafkago.Dialer, error) {
	get := func(key string) (string, bool) {
		v, ok := q[key]
		if !ok {
			return "", false
		}
		delete(q, key)
		return v[len(v)-1], true
	}
	bad := func(key, v, what string) error {
		return usagef("Kafka URL %q: parameter %s=%q: %s", shown, key, v, what)
	}
	boolParam := func(key string) (bool, error) {
		v, ok := get(key)
		if !ok {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, bad(key, v, "want true or false")
		}
		return b, nil
	}
	d := &kafkago.Dialer{Timeout: 10 * time.Second, DualStack: true}
	used := false

	useTLS, err := boolParam("tls")
	if err != nil {
		return nil, err
	}
	insecure, err := boolParam("tls_insecure")
	if err != nil {
		return nil, err
	}
	ca, hasCA := get("tls_ca")
	cert, hasCert := get("tls_cert")
	key, hasKey := get("tls_key")
	if useTLS || insecure || hasCA || hasCert || hasKey {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
		if hasCA {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, bad("tls_ca", ca, err.Error())
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, bad("tls_ca", ca, "no PEM certificate in the file")
			}
		}
		if hasCert != hasKey {
			return nil, usagef("Kafka URL %q: tls_cert and tls_key go together (a client certificate and its key)", shown)
		}
		if hasCert {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return nil, bad("tls_cert", cert, err.Error())
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		d.TLS, used = cfg, true
	}

	mech, hasMech := get("sasl")
	switch {
	case hasMech:
		if user == nil || user.Username() == "" {
			return nil, usagef("Kafka URL %q: sasl=%s needs a user: kafka://USER:PASSWORD@HOST:PORT/TOPIC (or the password in %s)", shown, mech, kafkaPasswordEnv)
		}
		pass, ok := user.Password()
		if !ok {
			if pass, ok = os.LookupEnv(kafkaPasswordEnv); !ok {
				return nil, usagef("Kafka URL %q: sasl=%s needs a password: kafka://USER:PASSWORD@HOST:PORT/TOPIC or %s", shown, mech, kafkaPasswordEnv)
			}
		}
		switch strings.ToLower(mech) {
		case "plain":
			d.SASLMechanism = plain.Mechanism{Username: user.Username(), Password: pass}
		case "scram-sha-256", "scram-sha-512":
			algo := scram.SHA256
			if strings.HasSuffix(mech, "512") {
				algo = scram.SHA512
			}
			m, err := scram.Mechanism(algo, user.Username(), pass)
			if err != nil {
				return nil, bad("sasl", mech, err.Error())
			}
			d.SASLMechanism = m
		default:
			return nil, bad("sasl", mech, "want plain, scram-sha-256 or scram-sha-512")
		}
		used = true
	case user != nil:
		return nil, usagef("Kafka URL %q: a user in the URL needs sasl=plain, scram-sha-256 or scram-sha-512", shown)
	}
	if id, ok := get("client_id"); ok {
		d.ClientID, used = id, true
	}
	if !used {
		return nil, nil
	}
	return d, nil
}

// redactURL returns path as messages show it: a URL's password, if it
// has one, replaced by "xxxxx" (even when the URL does not parse).
func redactURL(path string) string {
	if u, err := url.Parse(path); err == nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
		return path
	}
	if at := strings.LastIndex(path, "@"); at >= 0 {
		if i := strings.Index(path, "://"); i >= 0 && i < at {
			if c := strings.Index(path[i+3:at], ":"); c >= 0 {
				return path[:i+3+c+1] + "xxxxx" + path[at:]
			}
		}
	}
	return path
}

// redactErr returns err's text with its URL's password hidden (url.Parse
// quotes the whole URL).
func redactErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s %q: %v", ue.Op, redactURL(ue.URL), ue.Err)
	}
	return err.Error()
}

// openSource opens the input named by path: a Kafka topic URL, an object
// storage URL (s3://bucket/key, a prefix or a glob pattern; see
// source.OpenURL) or a file.
// Undecodable records go to dead. bounded asks a Kafka source to stop at
// the end offsets it sees at start (batch runs, backfills) unless the URL
// says otherwise; schema, when not nil, is the input's schema (--schema)
// instead of one inferred; fileOpts apply to files only.
func openSource(path string, bounded bool, dead source.DeadLetterFunc, schema *arrow.Schema, fileOpts ...source.Option) (source.Source, error) {
	if !isKafka(path) {
		opts := []source.Option{source.WithDeadLetter(dead)}
		if schema != nil {
			opts = append(opts, source.WithSchema(schema))
		}
		src, err := source.OpenURL(context.Background(), path, append(opts, fileOpts...)...)
		if err != nil {
			return nil, err
		}
		if _, ok := src.(*source.Parquet); ok && schema != nil {
			src.Close()
			return nil, usagef("--schema: %s is Parquet, whose files carry their schema; --schema applies to CSV and JSON-lines input and Kafka topics", path)
		}
		if src.Schema().NumFields() == 0 {
			// Inferred from rows none of which is a JSON object with a
			// field (a JSON array, not JSON lines; {} lines): the query
			// would fail on its first column, naming a table with none.
			src.Close()
			if s, ok := src.(interface{ SampledRows() (int, bool) }); ok {
				if n, _ := s.SampledRows(); n == 0 {
					return nil, fmt.Errorf("source: %s: no data rows, so no columns to infer: give them with --schema COL:TYPE,..., or skip the empty input", path)
				}
			}
			return nil, fmt.Errorf("source: %s: no columns: none of its first rows is a JSON object with fields (JSON lines hold one object per line; a JSON array is not read as rows)", path)
		}
		return src, nil
	}
	cfg, err := kafkaSourceConfig(path, bounded)
	if err != nil {
		return nil, err
	}
	cfg.DeadLetter = dead
	cfg.Schema = schema
	src, err := kafka.NewSource(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kafka source %s: %w", redactURL(path), err)
	}
	return src, nil
}

// kafkaSourceConfig returns the source configuration of a kafka:// URL;
// bounded is the default of stop_at_end.
func kafkaSourceConfig(path string, bounded bool) (kafka.Config, error) {
	brokers, topic, q, dialer, err := kafkaURL(path)
	if err != nil {
		return kafka.Config{}, err
	}
	cfg := kafka.Config{Brokers: brokers, Topic: topic, StopAtEnd: bounded, StartOffset: kafka.FirstOffset, Dialer: dialer}
	for _, key := range slices.Sorted(maps.Keys(q)) {
		v := q[key][len(q[key])-1]
		bad := func(what string) error {
			return usagef("Kafka URL %q: parameter %s=%q: %s", redactURL(path), key, v, what)
		}
		switch key {
		case "group":
			cfg.GroupID = v
		case "format":
			if v != kafka.FormatJSON && v != kafka.FormatAvro {
				return kafka.Config{}, bad("want json or avro")
			}
			cfg.Format = v
		case "schema_registry":
			cfg.SchemaRegistry = v
		case "avro_schema":
			text, err := os.ReadFile(v)
			if err != nil {
				return kafka.Config{}, bad(fmt.Sprintf("want a file holding the writer's Avro schema (.avsc): %v", err))
			}
			cfg.AvroSchema = string(text)
		case "time_field":
			cfg.TimeField = v
		case "time_column":
			cfg.TimeColumn = v
		case "start":
			switch v {
			case "first":
				cfg.StartOffset = kafka.FirstOffset
			case "last":
				cfg.StartOffset = kafka.LastOffset
			default:
				return kafka.Config{}, bad("want first or last")
			}
		case "batch_size":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return kafka.Config{}, bad("want a positive number")
			}
			cfg.BatchSize = n
		case "max_wait":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return kafka.Config{}, bad("want a positive duration such as 100ms")
			}
			cfg.MaxWait = d
		case "stop_at_end":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return kafka.Config{}, bad("want true or false")
			}
			cfg.StopAtEnd = b
		case "dead_letter_topic":
			cfg.DeadLetterTopic = v
		default:
			return kafka.Config{}, usagef("Kafka URL %q: unknown parameter %q", redactURL(path), key)
		}
	}
	return cfg, nil
}

// openOutput opens the output named by path: a Kafka topic URL or a file
// (by extension).
func openOutput(path string) (sink.Sink, error) {
	if !isKafka(path) {
		return sink.Open(path)
	}
	brokers, topic, q, dialer, err := kafkaURL(path)
	if err != nil {
		return nil, err
	}
	cfg := kafkasink.SinkConfig{Brokers: brokers, Topic: topic, Dialer: dialer}
	for _, key := range slices.Sorted(maps.Keys(q)) {
		v := q[key][len(q[key])-1]
		switch key {
		case "key":
			cfg.KeyColumns = strings.Split(v, ",")
		case "id":
			cfg.IDColumns = strings.Split(v, ",")
		default:
			return nil, usagef("Kafka URL %q: unknown sink parameter %q", redactURL(path), key)
		}
	}
	s, err := kafkasink.NewSink(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kafka sink %s: %w", redactURL(path), err)
	}
	return s, nil
}
