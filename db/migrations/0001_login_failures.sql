CREATE TABLE "login_failures" (
	"email" text NOT NULL,
	"address" text NOT NULL,
	"window_start" timestamp with time zone DEFAULT now() NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "login_failures_email_address_pk" PRIMARY KEY("email","address")
);
--> statement-breakpoint
CREATE INDEX "login_failures_window_start_idx" ON "login_failures" USING btree ("window_start");