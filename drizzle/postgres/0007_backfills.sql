CREATE TABLE "backfills" (
	"id" text PRIMARY KEY NOT NULL,
	"handler" text NOT NULL,
	"since" bigint,
	"until" bigint,
	"event_type" text,
	"rate" integer,
	"state" text NOT NULL,
	"cursor_received_at" bigint,
	"cursor_event_id" text,
	"step" integer DEFAULT 0 NOT NULL,
	"total" integer DEFAULT 0 NOT NULL,
	"requeued" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"recent" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"finished_at" bigint,
	"error" text,
	"lease_owner" text,
	"claim_id" text,
	"lease_until" bigint
);
--> statement-breakpoint
CREATE TABLE "handler_registrations" (
	"handler" text PRIMARY KEY NOT NULL,
	"first_seen_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "backfills_running_uq" ON "backfills" USING btree ("handler") WHERE "backfills"."state" = 'running';--> statement-breakpoint
CREATE INDEX "backfills_created_idx" ON "backfills" USING btree ("created_at");