CREATE TABLE `api_keys` (
	`account` text PRIMARY KEY NOT NULL,
	`secret` text NOT NULL,
	`fingerprint` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rate_tokens` (
	`account` text NOT NULL,
	`bucket` text NOT NULL,
	`token` integer NOT NULL,
	`taken_at` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account`, `bucket`, `token`)
);
