#ifndef VIVIFY_CZIP_SHIM_H
#define VIVIFY_CZIP_SHIM_H
#include <zip.h>
// ZIP_FL_* and ZIP_ER_* are plain integer macros and import as constants; nothing to wrap yet.
static inline zip_flags_t vivify_zip_fl_enc_guess(void) { return ZIP_FL_ENC_GUESS; }
#endif
