/*
 * tls.c -- load and check an HTTPS listener's certificate and key (tls.h).
 *
 * The protocol versions and key exchanges served are a GnuTLS priority
 * string (tls.h: TLS 1.2+ with forward secrecy unless --tls-priority says
 * otherwise). Each check gets its own message because each is a different
 * operator mistake: the wrong path, a file of the wrong kind (a key passed as the
 * certificate, a DER file), an encrypted key (onced has nobody to ask for
 * the passphrase), or a certificate and key from two different pairs.
 *
 * onced's own server serves its pair through once__tls_live (tls.h), which
 * SIGHUP loads again; the webhook receiver of `once listen` hands MHD the
 * PEM text once.
 */
#include <pthread.h>
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

/* --- credentials that change (tls.h) ------------------------------------- */

#ifdef ONCE_HAVE_TLS

/* The longest chain served: the certificate and its intermediates. */
#define CHAIN_MAX 16

/* One pair, as GnuTLS takes it from the certificate callback; immutable. */
typedef struct tls_pair {
    gnutls_pcert_st chain[CHAIN_MAX];
    unsigned n;
    gnutls_privkey_t key;
    struct tls_pair *older;   /* the retired list, newest first */
} tls_pair;

/* now changes under mu (once__tls_live_reload); every pair ever served is
 * on the list from now through `older` until once__tls_live_free. */
struct once__tls_live {
    pthread_mutex_t mu;
    tls_pair *now;
};

static void pair_free(tls_pair *p)
{
    for (unsigned i = 0; i < p->n; i++)
        gnutls_pcert_deinit(&p->chain[i]);
    if (p->key != NULL)
        gnutls_privkey_deinit(p->key);
    once_free(p);
}

/* The checked PEM text of t, imported for GnuTLS. */
static int pair_import(const once__tls *t, const char *cert_file, const char *key_file,
                       tls_pair **out, char *err, size_t errlen)
{
    tls_pair *p = once_calloc(1, sizeof *p);
    if (p == NULL)
        return ONCE_ENOMEM;
    gnutls_datum_t c = {(unsigned char *)t->cert, (unsigned)strlen(t->cert)};
    gnutls_datum_t k = {(unsigned char *)t->key, (unsigned)strlen(t->key)};
    p->n = CHAIN_MAX;
    int g = gnutls_pcert_list_import_x509_raw(p->chain, &p->n, &c, GNUTLS_X509_FMT_PEM, 0);
    if (g < 0) {
        p->n = 0;
        snprintf(err, errlen, "--tls-cert %s: %s", cert_file,
                 g == GNUTLS_E_SHORT_MEMORY_BUFFER ? "more than 16 certificates in the chain"
                                                   : gnutls_strerror(g));
    } else if ((g = gnutls_privkey_init(&p->key)) < 0 ||
               (g = gnutls_privkey_import_x509_raw(p->key, &k, GNUTLS_X509_FMT_PEM, NULL, 0)) <
                   0) {
        snprintf(err, errlen, "--tls-key %s: %s", key_file, gnutls_strerror(g));
    }
    if (g < 0) {
        pair_free(p);
        return ONCE_EINVAL;
    }
    *out = p;
    return ONCE_OK;
}

/* Read, check and import the pair in these files. */
static int pair_load(const char *cert_file, const char *key_file, tls_pair **out, char *err,
                     size_t errlen)
{
    once__tls t;
    int rc = once__tls_load(cert_file, key_file, &t, err, errlen);
    if (rc == ONCE_OK)
        rc = pair_import(&t, cert_file, key_file, out, err, errlen);
    once__tls_clear(&t);   /* GnuTLS holds its own copies now */
    return rc;
}

int once__tls_live_new(const char *cert_file, const char *key_file, once__tls_live **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    once__tls_live *l = once_calloc(1, sizeof *l);
    if (l == NULL)
        return ONCE_ENOMEM;
    int rc = pair_load(cert_file, key_file, &l->now, err, errlen);
    if (rc != ONCE_OK) {
        once_free(l);
        return rc;
    }
    pthread_mutex_init(&l->mu, NULL);
    *out = l;
    return ONCE_OK;
}

int once__tls_live_reload(once__tls_live *l, const char *cert_file, const char *key_file,
                          char sha256[2 * 32 + 1], char *err, size_t errlen)
{
    tls_pair *p;
    int rc = pair_load(cert_file, key_file, &p, err, errlen);
    if (rc != ONCE_OK)
        return rc;
    uint8_t d[ONCE_SHA256_LEN];
    once_sha256(p->chain[0].cert.data, p->chain[0].cert.size, d);
    once_hex(d, sizeof d, sha256);
    pthread_mutex_lock(&l->mu);
    p->older = l->now;
    l->now = p;
    pthread_mutex_unlock(&l->mu);
    return ONCE_OK;
}

void once__tls_live_pick(once__tls_live *l, gnutls_pcert_st **pcert, unsigned *n,
                         gnutls_privkey_t *key)
{
    pthread_mutex_lock(&l->mu);
    *pcert = l->now->chain;
    *n = l->now->n;
    *key = l->now->key;
    pthread_mutex_unlock(&l->mu);
}

void once__tls_live_free(once__tls_live *l)
{
    if (l == NULL)
        return;
    for (tls_pair *p = l->now, *next; p != NULL; p = next) {
        next = p->older;
        pair_free(p);
    }
    pthread_mutex_destroy(&l->mu);
    once_free(l);
}

unsigned once__tls_live_mhd(gnutls_certificate_retrieve_function2 *pick, const char *priority,
                            struct MHD_OptionItem opts[3])
{
    char *prio = (char *)(priority != NULL ? priority : ONCE_TLS_PRIORITY_DEFAULT);
    opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)pick};
    opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, prio};
    opts[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_USE_TLS;
}

#else /* !ONCE_HAVE_TLS: no pair is ever served */

int once__tls_live_new(const char *cert_file, const char *key_file, once__tls_live **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    snprintf(err, errlen, "--tls-cert: %s", ONCE_TLS_OFF_MSG);
    return ONCE_EUNSUPPORTED;
}

int once__tls_live_reload(once__tls_live *l, const char *cert_file, const char *key_file,
                          char sha256[2 * 32 + 1], char *err, size_t errlen)
{
    snprintf(err, errlen, "--tls-cert: %s", ONCE_TLS_OFF_MSG);
    return ONCE_EUNSUPPORTED;
}

void once__tls_live_pick(once__tls_live *l, struct gnutls_pcert_st **pcert, unsigned *n,
                         struct gnutls_privkey_st **key)
{
    *pcert = NULL;
    *n = 0;
    *key = NULL;
}

void once__tls_live_free(once__tls_live *l)
{
}

#endif /* ONCE_HAVE_TLS */
