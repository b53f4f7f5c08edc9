// Command release packages the static binaries `make release` built into
// dist/: a .deb for each architecture (nfpm, from packaging/nfpm.yaml), one
// OCI image for both as an oci-archive (the binary on an empty base with
// CA certificates and time-zone data, run as a user that is not root;
// built here, with no daemon and no base image pulled), and SHA256SUMS.
//
// It is a module of its own so that what packaging needs (nfpm,
// go-containerregistry and theirs) stays out of Jarvis's go.mod, its
// binary, `go vet ./...` and `go test ./...`.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
)

// arches are the architectures released, as Go and Debian name them.
var arches = []string{"amd64", "arm64"}

// The image's user, not root, and the directory it keeps its
// configuration and database in (a volume).
const (
	imageUID  = 65532
	imageData = "/data"
)

// What the image takes from the machine that builds it.
const (
	caCertificates = "/etc/ssl/certs/ca-certificates.crt"
	zoneinfo       = "/usr/share/zoneinfo"
)

type release struct {
	root, dist            string
	version, commit, date string
	// created is the build date, for the files in the packages.
	created time.Time
}

func main() {
	var r release
	flag.StringVar(&r.root, "root", "../..", "the repository")
	flag.StringVar(&r.version, "version", "", "the version (the VERSION file)")
	flag.StringVar(&r.commit, "commit", "", "the commit")
	flag.StringVar(&r.date, "date", "", "the build date, RFC 3339")
	flag.Parse()
	if err := r.run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func (r *release) run() error {
	var err error
	if r.created, err = time.Parse(time.RFC3339, r.date); err != nil {
		return fmt.Errorf("-date: %w", err)
	}
	if r.version == "" || r.commit == "" {
		return fmt.Errorf("-version and -commit are required")
	}
	r.dist = filepath.Join(r.root, "dist")
	var artefacts []string
	for _, arch := range arches {
		if _, err := os.Stat(r.binary(arch)); err != nil {
			return fmt.Errorf("the %s binary: %w (make release builds it)", arch, err)
		}
		deb, err := r.deb(arch)
		if err != nil {
			return fmt.Errorf("the %s .deb: %w", arch, err)
		}
		artefacts = append(artefacts, filepath.Base(r.binary(arch)), deb)
	}
	image, err := r.image()
	if err != nil {
		return fmt.Errorf("the image: %w", err)
	}
	artefacts = append(artefacts, image)
	return r.sums(artefacts)
}

// binary is the static binary `make release` built for arch.
func (r *release) binary(arch string) string {
	return filepath.Join(r.dist, fmt.Sprintf("jarvis_%s_linux_%s", r.version, arch))
}

// deb builds the .deb for arch and returns its name in dist/.
func (r *release) deb(arch string) (string, error) {
	env := map[string]string{"ARCH": arch, "VERSION": r.version, "BINARY": r.binary(arch)}
	cfg, err := nfpm.ParseFileWithEnvMapping(filepath.Join(r.root, "packaging", "nfpm.yaml"), func(k string) string { return env[k] })
	if err != nil {
		return "", err
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	info.MTime = r.created
	// Paths in nfpm.yaml are the repository's.
	for _, c := range info.Contents {
		if c.Source != "" && !filepath.IsAbs(c.Source) {
			c.Source = filepath.Join(r.root, c.Source)
		}
	}
	for _, s := range []*string{&info.Scripts.PostInstall, &info.Scripts.PreRemove, &info.Scripts.PostRemove} {
		*s = filepath.Join(r.root, *s)
	}
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	name := pkg.ConventionalFileName(info)
	f, err := os.Create(filepath.Join(r.dist, name))
	if err != nil {
		return "", err
	}
	if err := pkg.Package(info, f); err != nil {
		f.Close()
		return "", err
	}
	return name, f.Close()
}

// image builds the OCI image for every arch, as one index, into an
// oci-archive (an OCI layout in a tar) and returns its name in dist/.
func (r *release) image() (string, error) {
	base, err := r.baseLayer()
	if err != nil {
		return "", err
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range arches {
		img, err := r.archImage(base, arch)
		if err != nil {
			return "", fmt.Errorf("%s: %w", arch, err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	dir, err := os.MkdirTemp("", "jarvis-oci-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	// The layout holds one image, the index of both architectures, named
	// by the version: oci-archive:jarvis_VERSION_oci.tar is it.
	oci, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := oci.AppendIndex(index, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": r.version})); err != nil {
		return "", err
	}
	name := fmt.Sprintf("jarvis_%s_oci.tar", r.version)
	return name, tarDir(dir, filepath.Join(r.dist, name), r.created)
}

// archImage is the image of arch: the base layer, the binary's, and the
// configuration that runs it.
func (r *release) archImage(base v1.Layer, arch string) (v1.Image, error) {
	bin, err := os.ReadFile(r.binary(arch))
	if err != nil {
		return nil, err
	}
	binLayer, err := r.layer([]entry{{name: "usr/bin/jarvis", mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, base, binLayer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: r.created}
	cf.Config.Entrypoint = []string{"/usr/bin/jarvis"}
	cf.Config.Cmd = []string{"run", "--config", imageData + "/config.yaml"}
	cf.Config.User = fmt.Sprintf("%d:%d", imageUID, imageUID)
	cf.Config.WorkingDir = imageData
	cf.Config.Env = []string{"HOME=" + imageData, "SSL_CERT_FILE=" + caCertificates, "ZONEINFO=" + zoneinfo, "JARVIS_LOGGING_FORMAT=json"}
	cf.Config.Volumes = map[string]struct{}{imageData: {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "jarvis",
		"org.opencontainers.image.version":  r.version,
		"org.opencontainers.image.revision": r.commit,
		"org.opencontainers.image.created":  r.date,
	}
	return mutate.ConfigFile(img, cf)
}

// baseLayer is what every image has under the binary: CA certificates
// and time-zone data from this machine, the user the image runs as, its
// data directory and /tmp.
func (r *release) baseLayer() (v1.Layer, error) {
	certs, err := os.ReadFile(caCertificates)
	if err != nil {
		return nil, fmt.Errorf("CA certificates (Debian's ca-certificates): %w", err)
	}
	entries := []entry{
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\njarvis:x:%d:%d:jarvis:%s:/sbin/nologin\n", imageUID, imageUID, imageData)},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\njarvis:x:%d:\n", imageUID)},
		{name: strings.TrimPrefix(caCertificates, "/"), mode: 0o644, data: certs},
		{name: "tmp", mode: 0o1777 | fs.ModeDir},
		{name: strings.TrimPrefix(imageData, "/"), mode: 0o700 | fs.ModeDir, uid: imageUID},
	}
	zones, err := zoneEntries()
	if err != nil {
		return nil, fmt.Errorf("time-zone data (Debian's tzdata): %w", err)
	}
	return r.layer(append(entries, zones...))
}

// zoneEntries are the files of the time-zone database, as links where the
// database has links; its right/ and posix/ copies are left out.
func zoneEntries() ([]entry, error) {
	var entries []entry
	err := filepath.WalkDir(zoneinfo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(zoneinfo, path)
		if d.IsDir() && (rel == "right" || rel == "posix") {
			return filepath.SkipDir
		}
		e := entry{name: strings.TrimPrefix(path, "/")}
		switch {
		case d.IsDir():
			e.mode = 0o755 | fs.ModeDir
		case d.Type()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(path); err != nil {
				return err
			}
			e.mode = 0o777 | fs.ModeSymlink
		default:
			if e.data, err = os.ReadFile(path); err != nil {
				return err
			}
			e.mode = 0o644
		}
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

// entry is a file, directory or link of a layer.
type entry struct {
	name string
	mode fs.FileMode
	data []byte
	link string
	uid  int
}

// layer is a gzipped tar of entries, each dated created and owned by uid
// (root unless set), with the directories above them.
func (r *release) layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.name] = true
	}
	for _, e := range entries {
		var parents []string
		for dir := filepath.Dir(e.name); dir != "." && !seen[dir] && !listed[dir]; dir = filepath.Dir(dir) {
			parents = append(parents, dir)
			seen[dir] = true
		}
		slices.Reverse(parents)
		for _, dir := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: r.created}); err != nil {
				return nil, err
			}
		}
		h := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), ModTime: r.created, Uid: e.uid, Gid: e.uid}
		if e.mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case e.mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		case e.mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		seen[e.name] = true
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// tarDir writes the files under dir into the tar file to, in name order,
// dated created.
func tarDir(dir, to string, created time.Time) error {
	f, err := os.Create(to)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: created})
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: created}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sums writes SHA256SUMS for the artefacts, as sha256sum -c reads it.
func (r *release) sums(artefacts []string) error {
	var b strings.Builder
	for _, name := range artefacts {
		data, err := os.ReadFile(filepath.Join(r.dist, name))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	return os.WriteFile(filepath.Join(r.dist, "SHA256SUMS"), []byte(b.String()), 0o644)
}
