/*
 * The reader's resumption state (ps_reader_state_check) on untrusted
 * bytes: it may come from any checkpoint file. Only PS_EFORMAT and
 * PS_EVERSION are documented errors; a blob the check accepts must be
 * exactly PS_READER_STATE_BYTES long.
 */
#include "pairshard/reader.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_error err = {0};
    int rc = ps_reader_state_check(data, size, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc == 0 && size != PS_READER_STATE_BYTES)
        abort();
    if (rc < 0 && rc != PS_EFORMAT && rc != PS_EVERSION)
        abort();
    return 0;
}
