/*
 * tls.c -- load and check an HTTPS listener's certificate and key (tls.h).
 *
 * The protocol versions and key exchanges served are a GnuTLS priority
 * string (tls.h: TLS 1.2+ with forward secrecy unless --tls-priority says
 * otherwise). Each check gets its own message because each is a different
 * operator mistake: the wrong path, a file of the wrong kind (a key passed as the
 * certificate, a DER file), an encrypted key (onced has nobody to ask for
 * the passphrase), or a certificate and key from two different pairs.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "http/http.h"
#include "http/tls.h"

/* A certificate chain or a key is a few KiB; 1 MiB leaves room for long
 * chains and stops a wrong path (a log file, a device) early. */
#define TLS_FILE_MAX ((size_t)1 << 20)

int once__tls_supported(void)
{
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

unsigned once__tls_mhd(const once__tls *t, const char *priority, struct MHD_OptionItem opts[4])
{
    int on = t->cert != NULL;
    /* MHD takes the priority string as it is (it never writes to it). */
    char *prio = (char *)(priority != NULL ? priority : ONCE_TLS_PRIORITY_DEFAULT);
    opts[0] = (struct MHD_OptionItem){on ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, t->cert};
    opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, t->key};
    opts[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, prio};
    opts[3] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return on ? MHD_USE_TLS : 0;
}

void once__tls_clear(once__tls *t)
{
    if (t->key != NULL) {
        OPENSSL_cleanse(t->key, strlen(t->key));
        once_free(t->key);
    }
    once_free(t->cert);
    t->cert = t->key = NULL;
}

/* The file as a NUL-terminated string. */
static int read_text(const char *flag, const char *path, char **out, char *err, size_t errlen)
{
    char why[400] = "", *raw = NULL;
    size_t len = 0;
    int rc = once__read_file(path, TLS_FILE_MAX, &raw, &len, why, sizeof why);
    if (rc == ONCE_OK) {
        *out = once_strndup(raw, len);
        OPENSSL_cleanse(raw, len);   /* it may be the key */
        once_free(raw);
        return *out != NULL ? ONCE_OK : ONCE_ENOMEM;
    }
    if (rc != ONCE_ENOMEM)
        snprintf(err, errlen, "%s %s", flag, why);
    return rc;
}

/* Parse the certificate and the key out of t and check that they pair. */
static int check_pair(const once__tls *t, const char *cert_file, const char *key_file,
                      char *err, size_t errlen)
{
    BIO *cb = BIO_new_mem_buf(t->cert, -1), *kb = BIO_new_mem_buf(t->key, -1);
    X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    /* An empty passphrase callback: an encrypted key fails here instead of
     * prompting on a terminal a daemon does not have. */
    EVP_PKEY *k = kb && x ? PEM_read_bio_PrivateKey(kb, NULL, NULL, (void *)"") : NULL;
    int rc = ONCE_EINVAL;
    if (cb == NULL || kb == NULL)
        rc = ONCE_ENOMEM;
    else if (x == NULL)
        snprintf(err, errlen, "--tls-cert %s: no PEM certificate in it", cert_file);
    else if (k == NULL)
        snprintf(err, errlen,
                 "--tls-key %s: no PEM private key in it (or the key is encrypted: "
                 "the server needs it unencrypted)",
                 key_file);
    else if (X509_check_private_key(x, k) != 1)
        snprintf(err, errlen, "--tls-key %s does not belong to the certificate in --tls-cert %s",
                 key_file, cert_file);
    else
        rc = ONCE_OK;
    ERR_clear_error();   /* the failures above queue errors on this thread */
    EVP_PKEY_free(k);
    X509_free(x);
    BIO_free(kb);
    BIO_free(cb);
    return rc;
}

int once__tls_load(const char *cert_file, const char *key_file, once__tls *t, char *err,
                   size_t errlen)
{
    t->cert = t->key = NULL;
    if (cert_file == NULL || key_file == NULL) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together: give both or neither");
        return ONCE_EINVAL;
    }
    if (!once__tls_supported()) {
        snprintf(err, errlen, "this libmicrohttpd was built without HTTPS support (GnuTLS)");
        return ONCE_EINVAL;
    }
    int rc = read_text("--tls-cert", cert_file, &t->cert, err, errlen);
    if (rc == ONCE_OK)
        rc = read_text("--tls-key", key_file, &t->key, err, errlen);
    if (rc == ONCE_OK)
        rc = check_pair(t, cert_file, key_file, err, errlen);
    if (rc != ONCE_OK)
        once__tls_clear(t);
    return rc;
}
