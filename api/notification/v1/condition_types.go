package v1

// Reasons of the events and conditions of Alerts and Providers. Flux
// compatible: notification-controller api/v1 (v1.10) condition_types.go.
const (
	// InvalidConfigReason: part of the configuration cannot be used, e.g. an
	// invalid regexp in an Alert's inclusion or exclusion list.
	InvalidConfigReason = "InvalidConfig"
	// NotificationDispatchFailedReason: sending a notification failed.
	NotificationDispatchFailedReason = "NotificationDispatchFailed"
	// SourceFetchFailedReason: the involved object could not be read to
	// match an event source's matchLabels.
	SourceFetchFailedReason = "SourceFetchFailed"
	// MetadataAppendFailedReason: the event metadata sources (object
	// annotations, Alert eventMetadata, controller keys) set the same key.
	MetadataAppendFailedReason = "MetadataAppendFailed"
	// MigrationReason: Flux's reason for migrating an object to a static
	// resource; Eddy does not set it (kept for compatibility).
	MigrationReason = "Migration"
)
