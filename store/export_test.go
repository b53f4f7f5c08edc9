package store

// LatestVersion is the schema version Open brings a database to.
var LatestVersion = len(upgradeTable)
