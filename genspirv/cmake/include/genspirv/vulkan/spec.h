/* genspirv/vulkan/spec.h -- specialisation: constants by name, one value per shared id, the workgroup limits,
 * and the sizes a spec-sized array changes (the table's expressions, evaluated at the kernel's values).
 *
 * A part of genspirv/vulkan.h, which includes the parts in order (context, spec,
 * kernel, dispatch) inside its extern "C": include that header, not this one.
 */
#ifndef GENSPIRV_VULKAN_SPEC_H
#define GENSPIRV_VULKAN_SPEC_H

#ifndef GENSPIRV_VULKAN_H
#error "include genspirv/vulkan.h, not its parts"
#endif

/* -- specialisation ------------------------------------------------------------ */

static inline int genspirv_vki_is_int(genspirv_spec_type t)
{
    return t == GENSPIRV_SPEC_INT8 || t == GENSPIRV_SPEC_UINT8 || t == GENSPIRV_SPEC_INT16 ||
           t == GENSPIRV_SPEC_UINT16 || t == GENSPIRV_SPEC_INT32 || t == GENSPIRV_SPEC_UINT32 ||
           t == GENSPIRV_SPEC_INT64 || t == GENSPIRV_SPEC_UINT64;
}

static inline int genspirv_vki_is_signed(genspirv_spec_type t)
{
    return t == GENSPIRV_SPEC_INT8 || t == GENSPIRV_SPEC_INT16 || t == GENSPIRV_SPEC_INT32 ||
           t == GENSPIRV_SPEC_INT64;
}

/* A default's value as Python compares it: (kind 0 bool / 1 integer / 2 float, value). */
typedef struct genspirv_vki_value {
    int kind;
    int negative;        /* integers: the sign, and ... */
    uint64_t magnitude;  /* ... the magnitude */
    double real;         /* floats */
} genspirv_vki_value;

static inline double genspirv_vki_half(uint64_t bits)
{
    unsigned exponent = (unsigned)(bits >> 10) & 0x1fu;
    double mantissa = (double)(bits & 0x3ffu), value;
    int e;
    if (exponent == 0) {
        value = mantissa / 1024.0 / 16384.0;            /* subnormal: m * 2^-24 */
    } else if (exponent == 31) {
        value = 65536.0 + mantissa;                      /* inf and NaNs: past every finite half, apart */
    } else {
        value = 1.0 + mantissa / 1024.0;
        for (e = (int)exponent - 15; e > 0; e--) value *= 2.0;
        for (; e < 0; e++) value /= 2.0;
    }
    return (bits & 0x8000u) ? -value : value;
}

static inline genspirv_vki_value genspirv_vki_default(const genspirv_spec_constant *c)
{
    genspirv_vki_value v;
    uint64_t bits = c->default_bits;
    v.kind = c->type == GENSPIRV_SPEC_BOOL ? 0 : genspirv_vki_is_int(c->type) ? 1 : 2;
    v.negative = 0;
    v.magnitude = bits;
    v.real = 0.0;
    if (genspirv_vki_is_signed(c->type)) {
        unsigned width = 8u * c->size;
        uint64_t sign = (uint64_t)1 << (width - 1);
        if (bits & sign) {
            uint64_t mask = width == 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
            v.negative = 1;
            v.magnitude = ((~bits) + 1) & mask;
        }
    } else if (c->type == GENSPIRV_SPEC_FLOAT32) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        v.real = (double)f;
    } else if (c->type == GENSPIRV_SPEC_FLOAT64) {
        memcpy(&v.real, &bits, sizeof v.real);
    } else if (c->type == GENSPIRV_SPEC_FLOAT16) {
        v.real = genspirv_vki_half(bits);
    }
    return v;
}

static inline int genspirv_vki_same_default(const genspirv_spec_constant *a, const genspirv_spec_constant *b)
{
    genspirv_vki_value x = genspirv_vki_default(a), y = genspirv_vki_default(b);
    if (x.kind != y.kind) return 0;
    if (x.kind == 2) return x.real == y.real;
    return x.negative == y.negative && x.magnitude == y.magnitude;
}

/* The caller's value as the bits of constant c's type, or a refusal. */
static inline genspirv_vk_result genspirv_vki_spec_bits(genspirv_vk_context *ctx, const genspirv_module *m,
                                                        const genspirv_spec_constant *c,
                                                        const genspirv_vk_spec *s, uint64_t *bits)
{
    const char *type = genspirv_spec_type_name(c->type);
    if (c->type == GENSPIRV_SPEC_BOOL) {
        if (s->kind != GENSPIRV_VK_SPEC_BOOL) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s) "
                                     "needs a bool (genspirv_vk_spec_bool)", m->name, c->name, type);
        }
        *bits = s->u ? 1u : 0u;
        return GENSPIRV_VK_OK;
    }
    if (genspirv_vki_is_int(c->type)) {
        unsigned width = 8u * c->size;
        int negative = 0;
        uint64_t magnitude, most;
        if (s->kind == GENSPIRV_VK_SPEC_INT) {
            negative = s->i < 0;
            magnitude = negative ? (uint64_t)0 - (uint64_t)s->i : (uint64_t)s->i;
        } else if (s->kind == GENSPIRV_VK_SPEC_UINT) {
            magnitude = s->u;
        } else {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s) "
                                     "needs an integer (genspirv_vk_spec_int or _uint)", m->name, c->name, type);
        }
        if (genspirv_vki_is_signed(c->type)) {
            most = ((uint64_t)1 << (width - 1)) - (negative ? 0u : 1u);
        } else {
            most = negative ? 0u : width == 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1;
        }
        if ((negative && !genspirv_vki_is_signed(c->type) && magnitude != 0) || magnitude > most) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s): "
                                     "%s%llu is outside its range", m->name, c->name, type, negative ? "-" : "",
                                     (unsigned long long)magnitude);
        }
        *bits = negative ? ((uint64_t)0 - magnitude) : magnitude;
        if (width < 64) *bits &= ((uint64_t)1 << width) - 1;
        return GENSPIRV_VK_OK;
    }
    {
        double value = s->kind == GENSPIRV_VK_SPEC_FLOAT ? s->f
                       : s->kind == GENSPIRV_VK_SPEC_INT ? (double)s->i
                       : s->kind == GENSPIRV_VK_SPEC_UINT ? (double)s->u : 0.0;
        if (s->kind == GENSPIRV_VK_SPEC_BOOL) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s) "
                                     "needs a number, not a bool", m->name, c->name, type);
        }
        if (c->type == GENSPIRV_SPEC_FLOAT32) {
            float f = (float)value;
            uint32_t b32;
            memcpy(&b32, &f, sizeof b32);
            *bits = b32;
        } else if (c->type == GENSPIRV_SPEC_FLOAT64) {
            memcpy(bits, &value, sizeof value);
        } else {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: spec constant %s is "
                                     "a %s; genspirv/vulkan.h sets float16 constants only to their defaults",
                                     m->name, c->name, type);
        }
        return GENSPIRV_VK_OK;
    }
}

/* The map entries and data of a VkSpecializationInfo, and each id's value. */
typedef struct genspirv_vki_packed {
    VkSpecializationMapEntry entries[GENSPIRV_VK_MAX_SPEC_IDS];
    uint32_t entry_count;
    unsigned char data[GENSPIRV_VK_MAX_SPEC_IDS * 8];
    uint32_t size;
    uint32_t ids[GENSPIRV_VK_MAX_SPEC_IDS];     /* every distinct id ... */
    uint64_t values[GENSPIRV_VK_MAX_SPEC_IDS];  /* ... and the bits its constants run with */
    uint32_t id_count;
} genspirv_vki_packed;

static inline void genspirv_vki_put(genspirv_vki_packed *p, uint32_t id, uint32_t size, uint64_t bits)
{
    VkSpecializationMapEntry *e = &p->entries[p->entry_count++];
    uint8_t b8 = (uint8_t)bits;
    uint16_t b16 = (uint16_t)bits;
    uint32_t b32 = (uint32_t)bits;
    e->constantID = id;
    e->offset = p->size;
    e->size = size;
    /* Host byte order, as Vulkan reads the data. */
    if (size == 1) memcpy(p->data + p->size, &b8, 1);
    else if (size == 2) memcpy(p->data + p->size, &b16, 2);
    else if (size == 4) memcpy(p->data + p->size, &b32, 4);
    else memcpy(p->data + p->size, &bits, 8);
    p->size += size;
}

static inline genspirv_vk_result genspirv_vki_pack(genspirv_vk_context *ctx, const genspirv_module *m,
                                                   const genspirv_vk_spec *spec, size_t spec_count,
                                                   genspirv_vki_packed *p)
{
    const genspirv_spec_constant *given_by[GENSPIRV_VK_MAX_SPEC_IDS];   /* per id: the constant named, or NULL */
    uint64_t given_bits[GENSPIRV_VK_MAX_SPEC_IDS];
    size_t i, j;
    uint32_t k;
    p->entry_count = 0;
    p->size = 0;
    p->id_count = 0;
    for (i = 0; i < m->spec_count; i++) {     /* sorted by id: distinct ids in order */
        uint32_t id = m->spec_constants[i].id;
        if (p->id_count == 0 || p->ids[p->id_count - 1] != id) {
            if (p->id_count == GENSPIRV_VK_MAX_SPEC_IDS) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s has more than "
                                         "%d spec ids; define GENSPIRV_VK_MAX_SPEC_IDS larger", m->name,
                                         GENSPIRV_VK_MAX_SPEC_IDS);
            }
            given_by[p->id_count] = NULL;
            given_bits[p->id_count] = 0;
            p->ids[p->id_count++] = id;
        }
    }
    for (i = 0; i < spec_count; i++) {
        const genspirv_spec_constant *c = NULL;
        uint64_t bits = 0;
        genspirv_vk_result r;
        for (j = 0; j < m->spec_count && c == NULL; j++) {
            if (spec[i].name != NULL && m->spec_constants[j].name[0] != '\0' &&
                strcmp(spec[i].name, m->spec_constants[j].name) == 0) {
                c = &m->spec_constants[j];
            }
        }
        if (c == NULL) {
            char known[256];
            size_t used = 0;
            known[0] = '\0';
            for (j = 0; j < m->spec_count; j++) {
                const char *name = m->spec_constants[j].name;
                if (name[0] != '\0' && used + strlen(name) + 3 < sizeof known) {
                    used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", name);
                }
            }
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: unknown spec constant %s "
                                     "(known: %s)", m->name, spec[i].name != NULL ? spec[i].name : "(null)",
                                     used ? known : "none");
        }
        r = genspirv_vki_spec_bits(ctx, m, c, &spec[i], &bits);
        if (r != GENSPIRV_VK_OK) return r;
        for (k = 0; p->ids[k] != c->id; k++) {
        }
        if (given_by[k] != NULL && given_bits[k] != bits) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constants %s and %s "
                                     "share spec id %u but were given different values", m->name,
                                     given_by[k]->name, c->name, (unsigned)c->id);
        }
        given_by[k] = c;
        given_bits[k] = bits;
    }
    for (k = 0; k < p->id_count; k++) {
        const genspirv_spec_constant *first = NULL, *named = NULL;
        int disagree = 0, sizes_differ = 0;
        for (i = 0; i < m->spec_count; i++) {
            const genspirv_spec_constant *c = &m->spec_constants[i];
            if (c->id != p->ids[k]) continue;
            if (first == NULL) first = c;
            if (named == NULL && c->name[0] != '\0') named = c;
            if (!genspirv_vki_same_default(first, c)) disagree = 1;
            if (c->size != first->size) sizes_differ = 1;
        }
        if (given_by[k] != NULL || (named != NULL && disagree)) {
            const genspirv_spec_constant *c = given_by[k] != NULL ? given_by[k] : named;
            if (sizes_differ) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: the constants of spec "
                                         "id %u differ in size; one value cannot set them all", m->name,
                                         (unsigned)p->ids[k]);
            }
            p->values[k] = given_by[k] != NULL ? given_bits[k] : named->default_bits;
            genspirv_vki_put(p, p->ids[k], c->size, p->values[k]);
        } else {
            p->values[k] = (named != NULL ? named : first)->default_bits;
        }
    }
    return GENSPIRV_VK_OK;
}

/* The workgroup size after specialisation, and the device's limits on it. */
static inline genspirv_vk_result genspirv_vki_workgroup(genspirv_vk_context *ctx, const genspirv_module *m,
                                                        const genspirv_vki_packed *p, uint32_t local[3])
{
    uint64_t invocations = 1;
    uint32_t axis, k;
    for (axis = 0; axis < 3; axis++) {
        int32_t id = m->local_size_spec_ids[axis];
        local[axis] = m->local_size[axis];
        for (k = 0; id >= 0 && k < p->id_count; k++) {
            if (p->ids[k] == (uint32_t)id) local[axis] = (uint32_t)p->values[k];
        }
        if (local[axis] < 1 || local[axis] > ctx->max_workgroup_size[axis]) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_WORKGROUP, "genspirv: kernel %s: workgroup size %c = %u "
                                     "(from %s), the device allows 1 to %u along %c (maxComputeWorkGroupSize)",
                                     m->name, "xyz"[axis], (unsigned)local[axis],
                                     id >= 0 ? "a spec constant" : "the source", (unsigned)ctx->max_workgroup_size[axis],
                                     "xyz"[axis]);
        }
        invocations *= local[axis];
    }
    if (invocations > ctx->max_invocations) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_WORKGROUP, "genspirv: kernel %s: workgroup of %u x %u x %u = "
                                 "%llu invocations, the device allows at most %u (maxComputeWorkGroupInvocations)",
                                 m->name, (unsigned)local[0], (unsigned)local[1], (unsigned)local[2],
                                 (unsigned long long)invocations, (unsigned)ctx->max_invocations);
    }
    return GENSPIRV_VK_OK;
}

/* -- sizes a spec-sized array changes ------------------------------------------ */

#ifndef GENSPIRV_VK_MAX_SPEC_STACK
#define GENSPIRV_VK_MAX_SPEC_STACK 32
#endif

/* The value spec id `id` runs with, a signed type's sign-extended. */
static inline int64_t genspirv_vki_spec_value(const genspirv_module *m, const genspirv_vki_packed *p, int64_t id)
{
    uint32_t k, i;
    for (k = 0; k < p->id_count; k++) {
        if ((int64_t)p->ids[k] != id) continue;
        for (i = 0; i < m->spec_count; i++) {
            const genspirv_spec_constant *c = &m->spec_constants[i];
            unsigned width = 8u * c->size;
            uint64_t bits = p->values[k];
            if (c->id != p->ids[k]) continue;
            if (genspirv_vki_is_signed(c->type) && width < 64 && ((bits >> (width - 1)) & 1u)) {
                bits |= ~(((uint64_t)1 << width) - 1);
            }
            return (int64_t)bits;
        }
    }
    return 0;
}

/* v's bits at `width` (0: a bool, read as 0 or 1), signed or unsigned. */
static inline int64_t genspirv_vki_bits_as(int64_t v, unsigned width, int is_signed)
{
    uint64_t bits;
    if (width == 0 || width >= 64) return v;
    bits = (uint64_t)v & (((uint64_t)1 << width) - 1);
    if (is_signed && ((bits >> (width - 1)) & 1u)) bits |= ~(((uint64_t)1 << width) - 1);
    return (int64_t)bits;
}

static inline int genspirv_vki_signed_op(unsigned op)
{
    return op == 114 || op == 126 || op == 135 || op == 138 || op == 139 || op == 195 || op == 173 ||
           op == 175 || op == 177 || op == 179;
}

/* One OpSpecConstantOp over operands read at their widths: 0, or 1 on a division by zero, 2 for an
 * opcode the header does not know. */
static inline int genspirv_vki_apply(unsigned op, const int64_t *x, int64_t *out)
{
    int64_t a = x[0], b = x[1], r;
    switch (op) {
    case 113: case 114: r = a; break;                          /* UConvert, SConvert */
    case 126: r = -a; break;                                   /* SNegate */
    case 200: r = ~a; break;                                   /* Not */
    case 128: r = a + b; break;
    case 130: r = a - b; break;
    case 132: r = a * b; break;
    case 134: case 135: case 137: case 138: case 139:          /* UDiv, SDiv, UMod, SRem, SMod */
        if (b == 0) return 1;
        r = op == 134 || op == 135 ? a / b : a % b;            /* C truncates, as SDiv and SRem do */
        if (op == 139 && r != 0 && ((r < 0) != (b < 0))) r += b;   /* SMod: the divisor's sign */
        break;
    case 194: r = (int64_t)((uint64_t)a >> b); break;
    case 195: r = a < 0 ? ~(~a >> b) : a >> b; break;
    case 196: r = (int64_t)((uint64_t)a << b); break;
    case 197: r = a | b; break;
    case 198: r = a ^ b; break;
    case 199: r = a & b; break;
    case 164: case 170: r = a == b; break;
    case 165: case 171: r = a != b; break;
    case 166: r = a || b; break;
    case 167: r = a && b; break;
    case 168: r = !a; break;
    case 169: r = a ? b : x[2]; break;                         /* Select */
    case 172: case 173: r = a > b; break;
    case 174: case 175: r = a >= b; break;
    case 176: case 177: r = a < b; break;
    case 178: case 179: r = a <= b; break;
    default: return 2;
    }
    *out = r;
    return 0;
}

/* A size of the table (its steps, in reverse Polish order) at the packed spec values. */
static inline genspirv_vk_result genspirv_vki_spec_size(genspirv_vk_context *ctx, const genspirv_module *m,
                                                        const genspirv_vki_packed *p, const genspirv_spec_step *steps,
                                                        uint32_t n, const char *what, uint64_t *out)
{
    int64_t stack[GENSPIRV_VK_MAX_SPEC_STACK];
    uint32_t top = 0, i, j;
    for (i = 0; i < n; i++) {
        const genspirv_spec_step *s = &steps[i];
        uint32_t need = s->kind == GENSPIRV_STEP_OP ? s->arity : s->kind == GENSPIRV_STEP_LEN ? 1u
                        : s->kind >= GENSPIRV_STEP_ADD ? 2u : 0u;
        int64_t x[3] = {0, 0, 0}, r = 0;
        if (top < need || (need == 0 && top == GENSPIRV_VK_MAX_SPEC_STACK) || need > 3) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: its %s expression "
                                     "is malformed or deeper than GENSPIRV_VK_MAX_SPEC_STACK (%d); regenerate the "
                                     "table, or define it larger", m->name, what, GENSPIRV_VK_MAX_SPEC_STACK);
        }
        top -= need;
        for (j = 0; j < need; j++) x[j] = stack[top + j];
        switch (s->kind) {
        case GENSPIRV_STEP_NUMBER: r = s->value; break;
        case GENSPIRV_STEP_SPEC: r = genspirv_vki_spec_value(m, p, s->value); break;
        case GENSPIRV_STEP_LEN:
            if (x[0] < 1) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: with its spec values an "
                                         "array length in its %s is %lld; a length must be a positive integer",
                                         m->name, what, (long long)x[0]);
            }
            r = x[0];
            break;
        case GENSPIRV_STEP_ADD: r = x[0] + x[1]; break;
        case GENSPIRV_STEP_MUL: r = x[0] * x[1]; break;
        case GENSPIRV_STEP_MAX: r = x[0] > x[1] ? x[0] : x[1]; break;
        default: {                                             /* GENSPIRV_STEP_OP */
            int is_signed = genspirv_vki_signed_op(s->opcode), status;
            for (j = 0; j < need; j++) {
                if (s->opcode != 169 || j == 0) x[j] = genspirv_vki_bits_as(x[j], s->operand_bits[j], is_signed);
            }
            if ((s->opcode == 194 || s->opcode == 195 || s->opcode == 196) &&
                (x[1] < 0 || x[1] >= (int64_t)s->result_bits)) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: with its spec values "
                                         "its %s shifts a %u-bit value by %lld", m->name, what,
                                         (unsigned)s->result_bits, (long long)x[1]);
            }
            status = genspirv_vki_apply(s->opcode, x, &r);
            if (status != 0) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: with its spec values "
                                         "its %s %s", m->name, what, status == 1 ? "divides by zero"
                                         : "uses an opcode the header does not know; regenerate the table");
            }
            r = s->result_bits == 1 ? (r != 0) : genspirv_vki_bits_as(r, s->result_bits, s->result_signed);
        }
        }
        stack[top++] = r;
    }
    if (top != 1) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: its %s expression is "
                                 "malformed; regenerate the table", m->name, what);
    }
    *out = (uint64_t)stack[0];
    return GENSPIRV_VK_OK;
}

/* k's push-constant size, shared memory and min sizes at the packed spec values, and the
 * shared memory within maxComputeSharedMemorySize. */
static inline genspirv_vk_result genspirv_vki_sizes(genspirv_vk_context *ctx, const genspirv_module *m,
                                                    const genspirv_vki_packed *p, genspirv_vk_kernel *k)
{
    uint64_t size;
    uint32_t i;
    genspirv_vk_result r;
    k->push_constant_size = m->push_constant_size;
    k->shared_memory = m->shared_memory;
    for (i = 0; i < m->binding_count; i++) {
#ifdef GENSPIRV_HAS_MIN_SIZE
        k->min_sizes[i] = m->bindings[i].min_size;
#else
        k->min_sizes[i] = 0;
#endif
    }
#ifdef GENSPIRV_HAS_SPEC_SIZES
    if (m->push_constant_size_steps) {
        r = genspirv_vki_spec_size(ctx, m, p, m->push_constant_size_spec, m->push_constant_size_steps,
                                   "push-constant size", &size);
        if (r != GENSPIRV_VK_OK) return r;
        k->push_constant_size = (uint32_t)size;
    }
    if (m->shared_memory_steps) {
        r = genspirv_vki_spec_size(ctx, m, p, m->shared_memory_spec, m->shared_memory_steps, "shared memory", &size);
        if (r != GENSPIRV_VK_OK) return r;
        k->shared_memory = size > 0xffffffffu ? 0xffffffffu : (uint32_t)size;
    }
    for (i = 0; i < m->binding_count; i++) {
        if (m->bindings[i].min_size_steps == 0) continue;
        r = genspirv_vki_spec_size(ctx, m, p, m->bindings[i].min_size_spec, m->bindings[i].min_size_steps,
                                   "min_size", &k->min_sizes[i]);
        if (r != GENSPIRV_VK_OK) return r;
    }
#else
    (void)p; (void)size; (void)r;
#endif
    if (k->shared_memory > ctx->max_shared_memory) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_WORKGROUP, "genspirv: kernel %s declares %u bytes of shared "
                                 "memory at its spec values, the device allows at most %u "
                                 "(maxComputeSharedMemorySize)", m->name, (unsigned)k->shared_memory,
                                 (unsigned)ctx->max_shared_memory);
    }
    return GENSPIRV_VK_OK;
}

#endif /* GENSPIRV_VULKAN_SPEC_H */
