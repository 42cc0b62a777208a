CREATE TABLE "listen_cursors" (
	"remote" text PRIMARY KEY NOT NULL,
	"cursor" text,
	"since" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
DROP INDEX "deliveries_signed_content_uq";--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "duration_ms" integer;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "conflict_with" text;--> statement-breakpoint
ALTER TABLE "handler_runs" ADD COLUMN "duration_ms" integer;--> statement-breakpoint
ALTER TABLE "handler_runs" ADD COLUMN "failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_signed_content_uq" ON "deliveries" USING btree ("signature_t","content_digest") WHERE "deliveries"."conflict_with" is null;