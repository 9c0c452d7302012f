package lbpkg

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// LangBot's archive limits (SDK 0.5.5 runtime/plugin/artifact.py): a
// package that breaks one is refused at install.
const (
	MaxEntries          = 512
	MaxEntryBytes       = 16 << 20
	MaxTotalBytes       = 64 << 20
	MaxManifestBytes    = 1 << 20
	MaxCompressionRatio = 100
)

// ErrArchive is wrapped by CheckArchive for every limit a package breaks.
var ErrArchive = errors.New("lbpkg: archive outside LangBot's limits")

// entryTime is the modification time of every entry: fixed, so the same
// inputs give the same bytes (LangBot's artifact_digest is their sha256).
var entryTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// safePartRE is what one path component may be: no dotfiles, nothing a
// shell or a Windows extractor reads specially.
var safePartRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$`)

// file is one archive entry.
type file struct {
	Name string
	Data []byte
}

// writeZip writes files sorted by name with fixed timestamps and modes.
// An entry that deflate would shrink by more than half of LangBot's ratio
// limit is stored instead, so no entry trips the zip-bomb guard.
func writeZip(files []file) ([]byte, error) {
	sorted := append([]file(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range sorted {
		method := zip.Deflate
		if n := deflatedSize(f.Data); len(f.Data) == 0 || n == 0 || len(f.Data)/n > MaxCompressionRatio/2 {
			method = zip.Store
		}
		h := &zip.FileHeader{Name: f.Name, Method: method, Modified: entryTime}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, fmt.Errorf("lbpkg: zip %s: %w", f.Name, err)
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, fmt.Errorf("lbpkg: zip %s: %w", f.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("lbpkg: zip: %w", err)
	}
	return buf.Bytes(), nil
}

func deflatedSize(b []byte) int {
	var c countWriter
	fw, _ := flate.NewWriter(&c, flate.DefaultCompression)
	_, _ = fw.Write(b)
	_ = fw.Close()
	return int(c)
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// CheckArchive reports every way a package breaks LangBot's archive
// limits or this project's rules: no ZIP comment, manifest.yaml at the root, at most
// MaxEntries entries, per-entry, total and manifest sizes, compression
// ratios, safe relative names (no absolute paths, "..", backslashes, drive
// letters, duplicates, directories with content or non-regular files), and
// no tests, caches or dotfiles.
func CheckArchive(data []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrArchive, err)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if zr.Comment != "" {
		// LangBot 4.11 reads a certified archive's signed envelope from the
		// ZIP comment: ours are unsigned, so the comment stays empty and
		// the archive is the legacy kind an administrator may admit.
		bad("a ZIP comment (%d bytes): LangBot 4.11 would read it as a certification envelope", len(zr.Comment))
	}
	if len(zr.File) > MaxEntries {
		bad("%d entries (maximum %d)", len(zr.File), MaxEntries)
	}
	seen := map[string]bool{}
	var total, totalCompressed uint64
	manifest := false
	for _, f := range zr.File {
		name := f.Name
		if reason := unsafeName(name); reason != "" {
			bad("%q: %s", name, reason)
			continue
		}
		if seen[strings.ToLower(name)] {
			bad("%q: duplicate", name)
		}
		seen[strings.ToLower(name)] = true
		mode := f.Mode()
		if f.FileInfo().IsDir() || !mode.IsRegular() {
			bad("%q: not a regular file (mode %v)", name, mode)
			continue
		}
		if f.UncompressedSize64 > MaxEntryBytes {
			bad("%q: %d bytes (maximum %d)", name, f.UncompressedSize64, MaxEntryBytes)
		}
		if f.UncompressedSize64 > 0 && (f.CompressedSize64 == 0 || f.UncompressedSize64/f.CompressedSize64 >= MaxCompressionRatio) {
			bad("%q: compression ratio above %d", name, MaxCompressionRatio)
		}
		total += f.UncompressedSize64
		totalCompressed += f.CompressedSize64
		if name == "manifest.yaml" {
			manifest = true
			if f.UncompressedSize64 > MaxManifestBytes {
				bad("manifest.yaml: %d bytes (maximum %d)", f.UncompressedSize64, MaxManifestBytes)
			}
		}
		// The sizes above come from the directory; reading the entry
		// checks they are true.
		rc, err := f.Open()
		if err != nil {
			bad("%q: %v", name, err)
			continue
		}
		n, err := io.Copy(io.Discard, io.LimitReader(rc, MaxEntryBytes+1))
		rc.Close()
		if err != nil || uint64(n) != f.UncompressedSize64 {
			bad("%q: content does not match its size (%v)", name, err)
		}
	}
	if !manifest {
		bad("no manifest.yaml at the root")
	}
	if total > MaxTotalBytes {
		bad("%d bytes in total (maximum %d)", total, MaxTotalBytes)
	}
	if total > 0 && (totalCompressed == 0 || total/totalCompressed >= MaxCompressionRatio) {
		bad("aggregate compression ratio above %d", MaxCompressionRatio)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrArchive, errors.Join(errs...))
	}
	return nil
}

// unsafeName says why name may not be an entry, or "" when it may.
func unsafeName(name string) string {
	switch {
	case name == "" || strings.ContainsRune(name, 0):
		return "empty or NUL name"
	case strings.Contains(name, `\`):
		return "backslash in name"
	case strings.HasPrefix(name, "/"):
		return "absolute path"
	case path.Clean(name) != name:
		return "not a clean relative path"
	case len(name) >= 2 && name[1] == ':':
		return "drive letter"
	}
	parts := strings.Split(name, "/")
	for _, p := range parts {
		switch {
		case p == "..":
			return "parent reference"
		case strings.HasPrefix(p, "."):
			return "dotfile"
		case p == "__pycache__" || strings.HasSuffix(p, ".pyc"):
			return "Python cache"
		case p == "tests" || p == "test" || strings.HasPrefix(p, "test_") || strings.HasSuffix(p, "_test.py"):
			return "test file"
		case !safePartRE.MatchString(p):
			return "unsafe characters"
		}
	}
	return ""
}
