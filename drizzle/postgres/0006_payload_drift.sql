ALTER TABLE "deliveries" ADD COLUMN "drift" text;--> statement-breakpoint
CREATE INDEX "deliveries_drift_idx" ON "deliveries" USING btree ("received_at") WHERE "deliveries"."drift" is not null;