package testutil

import (
	"context"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets
)

// FileBucket opens a file:// bucket in a new temporary directory.
func FileBucket(t testing.TB) *blob.Bucket {
	t.Helper()
	return openBucket(t, "file://"+filepath.ToSlash(t.TempDir()))
}

// S3Bucket serves a fake S3 API (gofakes3, in memory) over HTTP on
// loopback and opens a bucket on it through s3blob, with the AWS SDK kept
// off the network: no instance metadata, static dummy credentials. It
// sets environment variables, so tests using it cannot be parallel.
func S3Bucket(t testing.TB) *blob.Bucket {
	t.Helper()
	srvURL := S3Server(t, "volga")
	return openBucket(t, S3URL(srvURL, "volga"))
}

// S3Server starts a fake S3 server holding bucket and sets the AWS
// environment variables a client (in this process or a child that
// inherits the environment) needs to use it; it returns the server's URL.
func S3Server(t testing.TB, bucket string) string {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	return srv.URL
}

// S3URL is the gocloud URL of bucket on the fake S3 server at srvURL.
func S3URL(srvURL, bucket string) string {
	q := url.Values{
		"endpoint":       {srvURL},
		"use_path_style": {"true"},
		"disable_https":  {"true"},
		"region":         {"us-east-1"},
	}
	return "s3://" + bucket + "?" + q.Encode()
}

func openBucket(t testing.TB, u string) *blob.Bucket {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
