package main

import (
	"testing"
	"time"

	"github.com/volga-go/volga/volgatest"
)

// TestFeaturesWithVolgatest unit-tests the example's feature definition the
// way an application would test its own, with package volgatest: a few
// transactions as a CSV literal and the features expected for each,
// worked out by hand (an empty field is NULL: an empty frame's sum).
func TestFeaturesWithVolgatest(t *testing.T) {
	events := volgatest.CSV(`
id,card_id,ts,merchant,amount
1,c1,2024-01-01T00:00:00Z,m1,10
2,c1,2024-01-01T00:30:00Z,m2,20
3,c1,2024-01-01T01:15:00Z,m1,5
4,c2,2024-01-01T00:10:00Z,m3,100
5,c1,2024-01-09T00:00:00Z,m4,1
`)
	want := `
id,spend_1h,n_24h,merchants_24h,max_7d,spend_1h_prev,n_24h_prev,merchants_24h_prev,max_7d_prev
1,10,1,1,10,,0,0,
2,30,2,2,20,10,1,1,10
3,25,3,2,20,20,2,2,20
4,100,1,1,100,,0,0,
5,1,1,1,1,,0,0,
`
	volgatest.Expect(t, volgatest.Run(t, featuresSQL, events), want)
	// Streaming, the transactions arriving out of order within an hour,
	// gives the same features.
	streamed := volgatest.Run(t, featuresSQL, events,
		volgatest.Streaming(time.Hour), volgatest.Shuffled("ts", time.Hour, 7))
	volgatest.Expect(t, streamed, want, volgatest.AnyOrder())
}
