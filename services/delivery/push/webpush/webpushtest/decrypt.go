package webpushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// decrypt opens an aes128gcm body (RFC 8188) as the browser does, with the
// subscription's private key and auth secret (RFC 8291 §3.4): one record,
// salt(16) | rs(4) | idlen(1) | the sender's public key | ciphertext.
func decrypt(body []byte, private *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen {
		return nil, errors.New("body shorter than its key id")
	}
	senderKey, ciphertext := body[21:21+idlen], body[21+idlen:]
	if uint32(len(ciphertext)) > rs {
		return nil, fmt.Errorf("more than one record (%d bytes, record size %d)", len(ciphertext), rs)
	}
	cek, nonce, err := contentKeys(private, senderKey, auth, salt)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the record: %w", err)
	}
	// The last record's padding: zeros after a 0x02 delimiter.
	end := bytes.LastIndexByte(bytes.TrimRight(plain, "\x00"), 2)
	if end < 0 || end != len(bytes.TrimRight(plain, "\x00"))-1 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:end], nil
}

// contentKeys derive the content encryption key and nonce.
func contentKeys(private *ecdh.PrivateKey, senderKey, auth, salt []byte) (cek, nonce []byte, err error) {
	sender, err := ecdh.P256().NewPublicKey(senderKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sender key: %w", err)
	}
	shared, err := private.ECDH(sender)
	if err != nil {
		return nil, nil, err
	}
	info := append([]byte("WebPush: info\x00"), private.PublicKey().Bytes()...)
	info = append(info, senderKey...)
	ikm, err := hkdf.Key(sha256.New, shared, auth, string(info), 32)
	if err != nil {
		return nil, nil, err
	}
	if cek, err = hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16); err != nil {
		return nil, nil, err
	}
	nonce, err = hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	return cek, nonce, err
}
