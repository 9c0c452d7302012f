package console_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

func sign(key, claims []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(claims)
	return m.Sum(nil)
}

// tinyPNG is a small real PNG.
func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 24, 24))
	for y := 0; y < 24; y++ {
		for x := 0; x < 24; x++ {
			img.Set(x, y, color.RGBA{R: uint8(40 + 8*x), G: uint8(100 + 4*y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// kvGet reads a session record straight from the bucket.
func kvGet(t *testing.T, h *harness, sc binding.Scope, sid string, out **model.Record) {
	t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := bus.Key(sc, "session", sid)
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var r model.Record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		t.Fatal(err)
	}
	*out = &r
}
