package plan

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
)

// sshKeyType is the OpenSSH name of an ECDSA P-521 key.
const sshKeyType = "ecdsa-sha2-nistp521"

// newSSHKeyPair returns a new ECDSA P-521 key: the private key as a PEM "EC PRIVATE KEY"
// (SEC 1, which OpenSSH reads) and the public key as an authorized_keys line.
func newSSHKeyPair() (private, authorizedKey []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	point, err := key.PublicKey.Bytes()
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), authorizedKeyLine(point), nil
}

// authorizedKeyLine encodes an uncompressed P-521 point in OpenSSH's public key format
// (RFC 5656 section 3.1: key type, curve name and point, each length-prefixed) as
// "<type> <base64>\n".
func authorizedKeyLine(point []byte) []byte {
	var blob bytes.Buffer
	for _, field := range [][]byte{[]byte(sshKeyType), []byte("nistp521"), point} {
		_ = binary.Write(&blob, binary.BigEndian, uint32(len(field)))
		blob.Write(field)
	}
	return []byte(sshKeyType + " " + base64.StdEncoding.EncodeToString(blob.Bytes()) + "\n")
}
