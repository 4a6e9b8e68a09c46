package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// answer is the part of a lookup response the test checks.
type answer struct {
	Key       map[string]string `json:"key"`
	At        time.Time         `json:"at"`
	Watermark string            `json:"watermark"`
	Features  struct {
		TopItems []struct {
			Value string `json:"value"`
			Count int64  `json:"count"`
		} `json:"top_items"`
		ClicksByCategory map[string]int64 `json:"clicks_by_category"`
		TopCategoryShare float64          `json:"top_category_share"`
	} `json:"features"`
}

// TestRecommendations runs the example (HTTP server and client included)
// and checks every JSON answer it prints against a brute-force
// computation over the generated clicks.
func TestRecommendations(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	clicks := defaultClicks()
	at := clicks[len(clicks)-1].TS.Add(queryOffset)

	// The expected requests: one per user, then ana with a candidate.
	type want struct {
		user      string
		candidate *click
	}
	wants := make([]want, 0, len(users)+1)
	for _, u := range users {
		wants = append(wants, want{user: u})
	}
	wants = append(wants, want{user: "ana", candidate: &click{User: "ana", Item: "item-07", Category: itemCategory(7), TS: at}})

	var got []answer
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "< ")
		if !ok {
			continue
		}
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		got = append(got, a)
	}
	if len(got) != len(wants) {
		t.Fatalf("printed %d answers, want %d:\n%s", len(got), len(wants), buf.String())
	}
	for i, w := range wants {
		a := got[i]
		if a.Key["user_id"] != w.user || !a.At.Equal(at) || a.Watermark != "+inf" {
			t.Errorf("answer %d: key %v at %s watermark %q, want user %s at %s watermark +inf", i, a.Key, a.At, a.Watermark, w.user, at)
		}
		history := clicks
		if w.candidate != nil {
			history = append(slices.Clone(clicks), *w.candidate)
		}
		top, byCat, share := bruteForce(history, w.user, at)
		gotTop := make([]string, len(a.Features.TopItems))
		for j, e := range a.Features.TopItems {
			gotTop[j] = e.Value + ":" + itoa(e.Count)
		}
		if !slices.Equal(gotTop, top) {
			t.Errorf("answer %d (%s): top_items %v, want %v", i, w.user, gotTop, top)
		}
		if !maps.Equal(a.Features.ClicksByCategory, byCat) {
			t.Errorf("answer %d (%s): clicks_by_category %v, want %v", i, w.user, a.Features.ClicksByCategory, byCat)
		}
		if math.Abs(a.Features.TopCategoryShare-share) > 1e-12 {
			t.Errorf("answer %d (%s): top_category_share %v, want %v", i, w.user, a.Features.TopCategoryShare, share)
		}
	}
	// The candidate click counts: ana's garden clicks grow by one.
	if got[len(got)-1].Features.ClicksByCategory["garden"] != got[0].Features.ClicksByCategory["garden"]+1 {
		t.Error("the candidate click is not counted in clicks_by_category")
	}
}

// bruteForce computes the three features of user at time at over the
// clicks of the last day (bounds inclusive): the top three items as
// "item:count" (count descending, then item ascending), the clicks per
// category, and the top category's share.
func bruteForce(clicks []click, user string, at time.Time) (top []string, byCat map[string]int64, share float64) {
	items := map[string]int64{}
	byCat = map[string]int64{}
	var total int64
	for _, c := range clicks {
		if c.User != user || c.TS.After(at) || c.TS.Before(at.Add(-24*time.Hour)) {
			continue
		}
		items[c.Item]++
		byCat[c.Category]++
		total++
	}
	keys := slices.Collect(maps.Keys(items))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(items[b], items[a]), cmp.Compare(a, b))
	})
	for _, k := range keys[:min(3, len(keys))] {
		top = append(top, k+":"+itoa(items[k]))
	}
	var best int64
	for _, n := range byCat {
		best = max(best, n)
	}
	if total > 0 {
		share = float64(best) / float64(total)
	}
	return top, byCat, share
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestGeneratorDeterministic guards the example's reproducibility.
func TestGeneratorDeterministic(t *testing.T) {
	a, b := generateClicks(200, 5), generateClicks(200, 5)
	if !slices.Equal(a, b) {
		t.Fatal("two streams from the same seed differ")
	}
	for i := 1; i < len(a); i++ {
		if !a[i].TS.After(a[i-1].TS) {
			t.Fatalf("click %d is not after the one before it", i+1)
		}
	}
}
