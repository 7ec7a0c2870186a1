// aes: FunctionBench's pyaes, the body encrypted (or decrypted: CTR is its
// own inverse) with AES in counter mode. Query: key=HEX (16, 24 or 32
// bytes: AES-128, -192, -256) and iv=HEX (16 bytes, the first counter
// block). Answer: application/octet-stream, as many bytes as the body.
package main

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"

	"faasched/functions/cgi"
)

func main() {
	q := cgi.Query()
	key, err := hex.DecodeString(q.Get("key"))
	if err != nil || (len(key) != 16 && len(key) != 24 && len(key) != 32) {
		cgi.Fail(400, "key must be 16, 24 or 32 bytes in hex")
	}
	iv, err := hex.DecodeString(q.Get("iv"))
	if err != nil || len(iv) != aes.BlockSize {
		cgi.Fail(400, "iv must be 16 bytes in hex")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		cgi.Fail(400, "%v", err)
	}
	body := cgi.Body()
	out := make([]byte, len(body))
	cipher.NewCTR(block, iv).XORKeyStream(out, body)
	cgi.Respond("application/octet-stream", out)
}
