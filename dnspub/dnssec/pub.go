package dnssec

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
)

// publicKeyString is the DNSKEY public key field of the key whose
// private half is signer (RFC 6605 §4 for ECDSA: the point's
// coordinates; RFC 8080 §3 for Ed25519), derived from the private key
// itself (a private file read with a DNSKEY may carry that DNSKEY's
// public key whatever its private one), "" for other keys.
func publicKeyString(signer crypto.Signer) string {
	switch k := signer.(type) {
	case *ecdsa.PrivateKey:
		d, err := k.Bytes()
		if err != nil {
			return ""
		}
		p, err := ecdh.P256().NewPrivateKey(d)
		if err != nil {
			return ""
		}
		b := p.PublicKey().Bytes() // 0x04 || X || Y
		return base64.StdEncoding.EncodeToString(b[1:])
	case ed25519.PrivateKey:
		return base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(k.Seed()).Public().(ed25519.PublicKey))
	}
	return ""
}
