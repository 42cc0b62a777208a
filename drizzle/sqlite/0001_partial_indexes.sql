DROP INDEX `deliveries_due_idx`;--> statement-breakpoint
CREATE INDEX `deliveries_open_status_idx` ON `deliveries` (`status`) WHERE "deliveries"."status" in ('queued', 'failed', 'dead');--> statement-breakpoint
CREATE INDEX `deliveries_due_idx` ON `deliveries` (`next_attempt_at`) WHERE "deliveries"."status" in ('queued', 'failed');