CREATE TABLE "deliveries" (
	"event_id" text PRIMARY KEY NOT NULL,
	"event_type" text NOT NULL,
	"signature_t" bigint NOT NULL,
	"content_digest" "bytea" NOT NULL,
	"body" "bytea" NOT NULL,
	"headers" text NOT NULL,
	"received_at" bigint NOT NULL,
	"last_received_at" bigint NOT NULL,
	"delivery_count" integer DEFAULT 1 NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"next_attempt_at" bigint,
	"lease_owner" text,
	"lease_until" bigint,
	"processed_at" bigint
);
--> statement-breakpoint
CREATE TABLE "handler_runs" (
	"event_id" text NOT NULL,
	"handler" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "handler_runs_event_id_handler_pk" PRIMARY KEY("event_id","handler")
);
--> statement-breakpoint
CREATE TABLE "heartbeats" (
	"name" text PRIMARY KEY NOT NULL,
	"beat_at" bigint NOT NULL,
	"down_from" bigint,
	"down_until" bigint
);
--> statement-breakpoint
CREATE TABLE "webhook_secrets" (
	"id" text PRIMARY KEY NOT NULL,
	"webhook_id" text,
	"url" text,
	"event_types" text,
	"secret" text NOT NULL,
	"fingerprint" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "webhook_secrets_fingerprint_unique" UNIQUE("fingerprint")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_signed_content_uq" ON "deliveries" USING btree ("signature_t","content_digest");--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "deliveries" USING btree ("next_attempt_at") WHERE "deliveries"."status" in ('queued', 'failed');--> statement-breakpoint
CREATE INDEX "deliveries_open_status_idx" ON "deliveries" USING btree ("status") WHERE "deliveries"."status" in ('queued', 'failed', 'dead');--> statement-breakpoint
CREATE INDEX "deliveries_received_idx" ON "deliveries" USING btree ("received_at");