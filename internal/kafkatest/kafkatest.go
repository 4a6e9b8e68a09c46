// Package kafkatest starts in-process Kafka clusters (kfake) for tests
// that need more than a plain one, such as a cluster that takes only TLS
// connections authenticated with SASL. It is a package of its own so
// that the packages importing testutil (the benchmark module's among
// them) do not depend on kfake.
package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// SecureKafka is an in-process Kafka cluster (kfake, on a loopback port)
// that takes only TLS connections authenticated with SASL: PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512 for one user, as managed clusters ask.
type SecureKafka struct {
	Addrs []string
	// TLS is a client's configuration, trusting the cluster's
	// certificate; CAFile holds that certificate as PEM.
	TLS    *tls.Config
	CAFile string
	// User and Password are the SASL credentials the cluster knows.
	User, Password string
}

// NewSecureKafka starts a SecureKafka with topics of partitions
// partitions; it stops when the test ends.
func NewSecureKafka(t testing.TB, partitions int32, topics ...string) *SecureKafka {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &SecureKafka{TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, CAFile: ca, User: "volga", Password: "s3cret-pw"}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...),
		kfake.EnableSASL(),
		kfake.Superuser("PLAIN", k.User, k.Password),
		kfake.Superuser("SCRAM-SHA-256", k.User, k.Password),
		kfake.Superuser("SCRAM-SHA-512", k.User, k.Password),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k.Addrs = c.ListenAddrs()
	return k
}
