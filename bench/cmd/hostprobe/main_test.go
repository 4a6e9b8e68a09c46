package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "2GiB": 2 << 30, "64KiB": 64 << 10, "4096": 4096} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "2GB", "MiB", "1.5GiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestQuantiles(t *testing.T) {
	lat := make([]float64, 0, 1000)
	for i := range 1000 {
		lat = append(lat, float64(1000-i)/100) // 10.00 down to 0.01
	}
	got := quantiles(lat)
	// Sorted: 0.01 ... 10.00; nearest rank: p50 = lat[499] = 5.00,
	// p99 = lat[989] = 9.90, p999 = lat[998] = 9.99; none over 10.
	if want := "p50_us=5.0 p99_us=9.9 p999_us=10.0 over_10us=0.0000"; got != want {
		t.Errorf("quantiles = %q, want %q", got, want)
	}
	lat = append(lat, 11, 12)
	if got, want := quantiles(lat), "over_10us=0.0020"; got[len(got)-len(want):] != want {
		t.Errorf("quantiles = %q, want it to end %q", got, want)
	}
}
