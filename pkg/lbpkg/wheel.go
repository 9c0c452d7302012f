package lbpkg

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// The nats-py wheel every package bundles: the official client, pure
// Python. A release build may pin another wheel by changing these three
// values together (pip download nats-py==<version> --no-deps).
const (
	NatsPyName    = "nats-py"
	NatsPyVersion = "2.15.0"
	NatsPySHA256  = "deb63b20216ae6aa893d10c307042d1206b2b8a58a8cc80f5ea63bf56039ec3f"
)

// NatsPyWheelFile is the pinned wheel's file name.
const NatsPyWheelFile = "nats_py-" + NatsPyVersion + "-py3-none-any.whl"

// Errors of CheckWheel, one per check, so a caller (and PK-7) can tell
// which one failed.
var (
	ErrWheelName    = errors.New("lbpkg: nats-py wheel has the wrong distribution name")
	ErrWheelVersion = errors.New("lbpkg: nats-py wheel has the wrong version")
	ErrWheelHash    = errors.New("lbpkg: nats-py wheel does not match the pinned sha256")
	ErrWheel        = errors.New("lbpkg: unusable nats-py wheel")
)

// wheelNameRE is PEP 427's file name: name-version(-build)?-py-abi-platform.whl.
var wheelNameRE = regexp.MustCompile(`^([A-Za-z0-9_.]+)-([A-Za-z0-9_.+!]+)(-[0-9][^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl$`)

// normalizeDist is PEP 503's normalisation of a distribution name.
func normalizeDist(s string) string {
	return strings.ToLower(regexp.MustCompile(`[-_.]+`).ReplaceAllString(s, "-"))
}

// wheelFile is one file taken from the wheel into a package.
type wheelFile struct {
	name string
	data []byte
}

// CheckWheel checks a nats-py wheel against the pin (file name, the
// METADATA inside, sha256) and returns the files a package bundles: the
// nats/ package and the wheel's .dist-info (licence and metadata).
func CheckWheel(file string, data []byte) ([]wheelFile, error) {
	m := wheelNameRE.FindStringSubmatch(filepath.Base(file))
	if m == nil {
		return nil, fmt.Errorf("%w: %q is not a wheel file name", ErrWheelName, filepath.Base(file))
	}
	if normalizeDist(m[1]) != NatsPyName {
		return nil, fmt.Errorf("%w: %q, want %s", ErrWheelName, m[1], NatsPyName)
	}
	if m[2] != NatsPyVersion {
		return nil, fmt.Errorf("%w: %s, want %s", ErrWheelVersion, m[2], NatsPyVersion)
	}
	if m[4] != "py3" || m[5] != "none" || m[6] != "any" {
		return nil, fmt.Errorf("%w: %s-%s-%s is not a pure-Python wheel", ErrWheel, m[4], m[5], m[6])
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != NatsPySHA256 {
		return nil, fmt.Errorf("%w: got %s, want %s", ErrWheelHash, got, NatsPySHA256)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWheel, err)
	}
	distInfo := m[1] + "-" + m[2] + ".dist-info/"
	var out []wheelFile
	var name, version string
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if !strings.HasPrefix(f.Name, "nats/") && !strings.HasPrefix(f.Name, distInfo) {
			continue
		}
		if strings.Contains(f.Name, "__pycache__/") || strings.HasSuffix(f.Name, ".pyc") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrWheel, f.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, MaxEntryBytes+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrWheel, f.Name, err)
		}
		if f.Name == distInfo+"METADATA" {
			name, version = metadataFields(b)
		}
		out = append(out, wheelFile{name: path.Clean(f.Name), data: b})
	}
	if normalizeDist(name) != NatsPyName || version != NatsPyVersion {
		return nil, fmt.Errorf("%w: METADATA says %q %q", ErrWheelVersion, name, version)
	}
	return out, nil
}

// metadataFields reads Name and Version from a wheel's METADATA headers.
func metadataFields(b []byte) (name, version string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Name: "); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Version: "); ok {
			version = strings.TrimSpace(v)
		}
	}
	return name, version
}
