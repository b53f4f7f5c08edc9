package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ContentSignature is a journal entry's content signature: "sha256:" and
// the hex SHA-256 of the content.
func ContentSignature(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SigningKey is an agent's attestation signing key, derived from its
// token: HMAC-SHA256 keyed with the token of "jarvis attestation key v1".
func SigningKey(token string) []byte {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("jarvis attestation key v1"))
	return mac.Sum(nil)
}

// Sign is an attestation's signature: the hex HMAC-SHA256, under the
// agent's signing key, of "jarvis-attestation-v1", the agent, the subject,
// its hash, the verdict, the timestamp (RFC 3339, as sent) and the
// rationale, joined with newlines.
func Sign(token, agent, subject, subjectHash, verdict, timestamp, rationale string) string {
	mac := hmac.New(sha256.New, SigningKey(token))
	mac.Write([]byte(strings.Join([]string{"jarvis-attestation-v1", agent, subject, subjectHash, verdict, timestamp, rationale}, "\n")))
	return hex.EncodeToString(mac.Sum(nil))
}
