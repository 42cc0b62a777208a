ALTER TABLE `deliveries` ADD `duration_ms` integer;--> statement-breakpoint
ALTER TABLE `handler_runs` ADD `duration_ms` integer;--> statement-breakpoint
ALTER TABLE `handler_runs` ADD `failures` integer DEFAULT 0 NOT NULL;