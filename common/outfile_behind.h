/* common/outfile_behind.h — an outfile's write-behind thread (outfile.c's
 * part of ps_outfile_write_behind; nothing else uses it). */
#ifndef PS_COMMON_OUTFILE_BEHIND_H
#define PS_COMMON_OUTFILE_BEHIND_H

#include "pairshard/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ps_write_behind ps_write_behind;

/* A write-behind for the open descriptor fd (not taken over; the thread
 * starts with the first full buffer), `at` bytes into it. is_temp: fd is a
 * temporary of ours, whose writeback is started every few MiB (from
 * `kicked` on). 0 or PS_ENOMEM. */
int ps_write_behind_new(ps_write_behind **out, int fd, bool is_temp, uint64_t at,
                        uint64_t kicked);
/* Copies n bytes in, handing full buffers to the thread; waits while all
 * buffers are queued. 0, or the errno of a failed write (this one's or an
 * earlier buffer's) or ENOMEM. */
int ps_write_behind_write(ps_write_behind *b, const void *p, size_t n);
/* Hands over the last buffer and waits until everything is written. 0 or
 * the errno of the first failed write. */
int ps_write_behind_finish(ps_write_behind *b);
/* Stops the thread (what is still queued is dropped) and frees. NULL is
 * fine. */
void ps_write_behind_free(ps_write_behind *b);

#endif
