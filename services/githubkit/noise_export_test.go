package githubkit

// KindNoise is the key kind of a chat's quiet hours, digest and held
// events, for tests that read the record.
const KindNoise = kindNoise
