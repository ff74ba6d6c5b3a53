/* audit.c - appends to audit_log. */
#include "audit.h"

enum db_status audit_append(struct db_conn *c, const char *actor, const char *action,
                            const char *subject, const char *detail, const char *request_id)
{
    const char *p[] = { actor, action, subject, detail, request_id };

    return db_exec(c, ST_AUDIT_INSERT, p, 5, NULL);
}
