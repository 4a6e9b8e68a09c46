package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleDir holds the files the README's command-line examples use.
const exampleDir = "../../examples/cli"

// readmeCommand is a "$ volga ..." line of a code block of
// examples/cli/README.md and the lines printed after it.
type readmeCommand struct {
	args   []string
	output string
}

// readmeCommands returns the volga commands of the code blocks of
// examples/cli/README.md, and the curl lines with what they print.
func readmeCommands(t *testing.T) (volga, curl []readmeCommand) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(exampleDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cur *readmeCommand
	var cmds []*readmeCommand
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock, cur = !inBlock, nil
		case !inBlock:
		case strings.HasPrefix(line, "$ "):
			cur = &readmeCommand{args: strings.Fields(strings.TrimPrefix(line, "$ "))}
			cmds = append(cmds, cur)
		case cur != nil && line != "":
			cur.output += line + "\n"
		}
	}
	for _, c := range cmds {
		switch c.args[0] {
		case "volga":
			c.args = c.args[1:]
			volga = append(volga, *c)
		case "curl":
			curl = append(curl, *c)
		}
	}
	return volga, curl
}

// TestREADMECommands runs the commands of examples/cli/README.md (those the
// README's command-line section points to) over its files, as written,
// and checks that they print what the README shows: the values were
// worked out by hand from transactions.csv (see the README's prose).
func TestREADMECommands(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"spend.sql", "transactions.csv", "labels.csv", "lookups.jsonl"} {
		b, err := os.ReadFile(filepath.Join(exampleDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	volga, curl := readmeCommands(t)
	ran := map[string]bool{}
	var runOutput string
	for _, c := range volga {
		if c.args[0] == "serve" {
			args := c.args[1:]
			for i := range args {
				if args[i] == "--listen" {
					args = append(args[:i:i], args[i+2:]...) // startServe listens on a free port
					break
				}
			}
			url, _, stop := startServe(t, dir, args...)
			if len(curl) == 0 {
				t.Fatal("no curl command after volga serve")
			}
			for _, cu := range curl {
				body := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(strings.Join(cu.args, " "))
				if body == nil {
					t.Fatalf("curl without -d '...': %v", cu.args)
				}
				status, got := postJSON(t, url+"/v1/features", body[1])
				if status != 200 || got != cu.output {
					t.Errorf("curl %s: status %d,\n%s\nthe README shows\n%s", body[1], status, got, cu.output)
				}
			}
			if code := stop(); code != exitOK {
				t.Errorf("serve stopped with exit status %d, want 0", code)
			}
			ran["serve"] = true
			continue
		}
		code, stdout, stderr := cli(t, context.Background(), dir, "", c.args...)
		if code != exitOK || stdout != c.output || stderr != "" {
			t.Errorf("volga %s: exit %d, stderr %q, stdout:\n%s\nthe README shows:\n%s", strings.Join(c.args, " "), code, stderr, stdout, c.output)
		}
		if c.args[0] == "run" {
			runOutput = stdout
		}
		ran[c.args[0]] = true
	}
	for _, cmd := range []string{"run", "serve", "backfill", "check"} {
		if !ran[cmd] {
			t.Errorf("examples/cli/README.md shows no volga %s command", cmd)
		}
	}

	// The stream run of the main README writes the batch rows, as JSON lines.
	code, _, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "spend.sql", "--source", "tx=transactions.csv", "--mode", "stream", "--max-out-of-order", "30s", "--sink", "features.jsonl")
	if got, want := readFile(t, filepath.Join(dir, "features.jsonl")), csvToJSONL(t, runOutput); code != exitOK || stderr != "" || got != want {
		t.Errorf("stream run: exit %d, stderr %q, features.jsonl:\n%s\nwant:\n%s", code, stderr, got, want)
	}
	// And the backfill into Parquet.
	code, _, stderr = cli(t, context.Background(), dir, "", "backfill", "--sql", "spend.sql", "--source", "tx=transactions.csv", "--spine", "labels.csv", "--sink", "train.parquet", "--strict")
	if code != exitOK || stderr != "" {
		t.Errorf("backfill --sink train.parquet: exit %d, stderr %q", code, stderr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "train.parquet")); err != nil || fi.Size() == 0 {
		t.Errorf("backfill --sink train.parquet wrote no file: %v", err)
	}
}
