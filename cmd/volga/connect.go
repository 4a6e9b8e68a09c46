package main

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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
// read from its start), format (json, the only one), time_field (a message
// field holding event time) or time_column (the name of the column holding
// the message timestamp, default event_time), start (first|last),
// batch_size, max_wait (a duration), stop_at_end (true|false: read up to
// the end offsets seen at start; the default in batch mode, backfill and
// check), dead_letter_topic. Sink parameters: key (comma-separated key
// columns: a key's rows land in one partition), id (columns giving each
// row a stable identity header).

const kafkaScheme = "kafka://"

func isKafka(path string) bool { return strings.HasPrefix(path, kafkaScheme) }

// kafkaURL splits a kafka:// URL.
func kafkaURL(raw string) (brokers []string, topic string, q url.Values, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", nil, usagef("bad Kafka URL %q: %v", raw, err)
	}
	topic = strings.Trim(u.Path, "/")
	if u.Host == "" || topic == "" || strings.Contains(topic, "/") {
		return nil, "", nil, usagef("bad Kafka URL %q: want kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?params]", raw)
	}
	return strings.Split(u.Host, ","), topic, u.Query(), nil
}

// openSource opens the input named by path: a Kafka topic URL or a file.
// Undecodable records go to dead. bounded asks a Kafka source to stop at
// the end offsets it sees at start (batch runs, backfills) unless the URL
// says otherwise; fileOpts apply to files only.
func openSource(path string, bounded bool, dead source.DeadLetterFunc, fileOpts ...source.Option) (source.Source, error) {
	if !isKafka(path) {
		return source.Open(path, append([]source.Option{source.WithDeadLetter(dead)}, fileOpts...)...)
	}
	cfg, err := kafkaSourceConfig(path, bounded)
	if err != nil {
		return nil, err
	}
	cfg.DeadLetter = dead
	src, err := kafka.NewSource(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kafka source %s: %w", path, err)
	}
	return src, nil
}

// kafkaSourceConfig returns the source configuration of a kafka:// URL;
// bounded is the default of stop_at_end.
func kafkaSourceConfig(path string, bounded bool) (kafka.Config, error) {
	brokers, topic, q, err := kafkaURL(path)
	if err != nil {
		return kafka.Config{}, err
	}
	cfg := kafka.Config{Brokers: brokers, Topic: topic, StopAtEnd: bounded, StartOffset: kafka.FirstOffset}
	for _, key := range slices.Sorted(maps.Keys(q)) {
		v := q[key][len(q[key])-1]
		bad := func(what string) error {
			return usagef("Kafka URL %q: parameter %s=%q: %s", path, key, v, what)
		}
		switch key {
		case "group":
			cfg.GroupID = v
		case "format":
			if v != "json" {
				return kafka.Config{}, bad("only json is supported")
			}
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
			return kafka.Config{}, usagef("Kafka URL %q: unknown parameter %q", path, key)
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
	brokers, topic, q, err := kafkaURL(path)
	if err != nil {
		return nil, err
	}
	cfg := kafkasink.SinkConfig{Brokers: brokers, Topic: topic}
	for _, key := range slices.Sorted(maps.Keys(q)) {
		v := q[key][len(q[key])-1]
		switch key {
		case "key":
			cfg.KeyColumns = strings.Split(v, ",")
		case "id":
			cfg.IDColumns = strings.Split(v, ",")
		default:
			return nil, usagef("Kafka URL %q: unknown sink parameter %q", path, key)
		}
	}
	s, err := kafkasink.NewSink(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kafka sink %s: %w", path, err)
	}
	return s, nil
}
