// OpenSSL's libcrypto: AES-128 for resolving private addresses (EVP API only).
#include <openssl/evp.h>
