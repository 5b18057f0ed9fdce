CREATE TABLE "resource_event_horizons" (
	"table_name" text PRIMARY KEY NOT NULL,
	"purged_through" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "resource_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "resource_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"table_name" text NOT NULL,
	"op" text NOT NULL,
	"row_id" integer NOT NULL,
	"owner_id" integer,
	"row" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "resource_events_op" CHECK ("resource_events"."op" in ('created', 'updated', 'deleted'))
);
--> statement-breakpoint
CREATE TABLE "stream_tickets" (
	"hash" text PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"session_id" uuid,
	"resource" text NOT NULL,
	"scopes" text DEFAULT '' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "stream_tickets" ADD CONSTRAINT "stream_tickets_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "resource_events_table_name_id_idx" ON "resource_events" USING btree ("table_name","id");--> statement-breakpoint
CREATE INDEX "stream_tickets_user_id_idx" ON "stream_tickets" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "stream_tickets_expires_at_idx" ON "stream_tickets" USING btree ("expires_at");