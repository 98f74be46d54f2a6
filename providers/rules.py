"""The capacity rule, once, in Python and in SQL side by side.

An inventory can hold capacity = (total - reserved) * allocation_ratio
(`capacity`; `whole_capacity` as Placement truncates it). One more claim of
`amount` fits it when the amount is within min_unit..max_unit and a multiple
of step_size (`takes`), and used + amount <= capacity (`holds`, `fits`).
The room left is capacity - used (`room`, below 0 when over capacity);
what is free is the room, never below 0 (`free`): an inventory lowered
below what is allocated has nothing free. Utilization is used /
capacity, a fraction, unknown (None) without capacity (`utilization`); a
percent only where an answer or a page gives one (`percent`). Claims of one
amount fit one after another `slots` times: the largest k with
used + k * amount <= capacity. "Used" is Inventory.used, the
sum of the inventory's allocations the database keeps
(allocations.usage_totals).

The claim check, the candidate search and its explanation, GET /capacity's
"how many more fit", the books, the dashboards, the metrics, the status
checks and the scale loader all ask these; tests/providers/test_rules.py holds the
Python and the SQL to the same answers on random inventories.

A pool (an aggregate) holds its members and every provider in the tree of
a member root, as a candidate search's member_of reads it (a compute
node's NUMA nodes hold its VCPU): `pools_of` a provider, `in_pool_sql` as a
condition on providers; the same test holds them to the same answers on
random trees.
"""
import math

from django.db import models
from django.db.models import Case
from django.db.models import F
from django.db.models import FloatField
from django.db.models import Q
from django.db.models import Value
from django.db.models import When
from django.db.models.functions import Cast
from django.db.models.functions import Floor
from django.db.models.functions import Mod
from django.db.models.functions import NullIf
from django.db.models.lookups import Exact
from django.db.models.lookups import GreaterThan
from django.db.models.lookups import GreaterThanOrEqual
from django.db.models.lookups import LessThan
from django.db.models.lookups import LessThanOrEqual

# Past this many slots float division is no longer exact to the unit (and
# the rounding is not corrected): an inventory this large is unlimited for
# any practical request anyway.
EXACT_SLOTS = 2 ** 52


# ---- Python ------------------------------------------------------------------------

def capacity(total, reserved, allocation_ratio):
    """What the inventory can hold: (total - reserved) * allocation_ratio."""
    return (total - reserved) * allocation_ratio


def whole_capacity(total, reserved, allocation_ratio):
    """capacity truncated to a whole number, as Placement reports it (a
    provider summary's capacity) and judges an inventory by (refused below
    0, or at 0 before microversion 1.26)."""
    return int(capacity(total, reserved, allocation_ratio))


def valid_capacity(total, reserved, allocation_ratio, *, reserved_can_be_total=True):
    """May an inventory have these amounts? Not when its whole capacity is
    below 0, nor 0 where reserved may not equal total (Placement before
    microversion 1.26)."""
    whole = whole_capacity(total, reserved, allocation_ratio)
    return whole > 0 or (whole == 0 and reserved_can_be_total)


def holds(used, capacity):
    """The inventory holds `used` within its capacity."""
    return used <= capacity


def room(capacity, used):
    """capacity - used, below 0 when over capacity: what an amount must
    fit within (the candidate search's test, as holds() counts)."""
    return capacity - used


def free(capacity, used):
    """What is left to claim, as the books show it: room, never below 0."""
    return max(room(capacity, used), 0.0)


def utilization(used, capacity):
    """used / capacity, a fraction (1.0: full); None without capacity."""
    return used / capacity if capacity else None


def percent(used, capacity):
    """utilization as a percent, for answers and pages that give one;
    None without capacity. (100 * used / capacity, in that order: the
    answers' digits.)"""
    return 100.0 * used / capacity if capacity else None


def pools_of(own, roots):
    """The pools a provider is in: its own aggregates (a set) and those of
    its tree's root (empty for a root)."""
    return own | roots if roots else own


def takes(amount, min_unit, max_unit, step_size):
    """A claim of `amount` is within min_unit..max_unit and step_size."""
    return min_unit <= amount <= max_unit and amount % step_size == 0


def fits(amount, *, total, reserved, allocation_ratio, used, min_unit, max_unit, step_size):
    """One more claim of `amount` fits the inventory."""
    return (takes(amount, min_unit, max_unit, step_size)
            and holds(used + amount, capacity(total, reserved, allocation_ratio)))


# The limits an inventory can refuse a claim by, in the order an
# explanation names them: an inventory's own settings first (they refuse
# whatever is free), then what is free.
LIMITS = ('max_unit', 'min_unit', 'step_size', 'capacity')


def refusals(amount, *, total, reserved, allocation_ratio, used, min_unit, max_unit, step_size):
    """The limits refusing one more claim of `amount` (in LIMITS' order;
    empty exactly when it fits)."""
    refused = {'max_unit': amount > max_unit, 'min_unit': amount < min_unit,
               'step_size': amount % step_size != 0,
               'capacity': used + amount > capacity(total, reserved, allocation_ratio)}
    return tuple(limit for limit in LIMITS if refused[limit])


def slots(amount, *, total, reserved, allocation_ratio, used, min_unit, max_unit, step_size):
    """How many claims of `amount` fit one after another (0 when the
    inventory does not take the amount at all)."""
    if not takes(amount, min_unit, max_unit, step_size):
        return 0
    limit = capacity(total, reserved, allocation_ratio)
    room = (limit - used) / amount
    if room < 1:
        return 0
    k = math.floor(room)
    if room >= EXACT_SLOTS:
        return k
    # The float division may round across a whole number: step back or on.
    if used + k * amount > limit:
        return k - 1
    if used + (k + 1) * amount <= limit:
        return k + 1
    return k


# ---- SQL (expressions over an inventory row; `prefix` reaches it through a relation) ----

class SQLConstant(models.Expression):
    """A number written into the query's text, not bound as a parameter:
    SQLite matches an expression index (inventories' utilization) only
    against the same expression, and a bound parameter is not a constant
    to it (PostgreSQL's driver writes parameters into the text anyway)."""

    def __init__(self, value, output_field=None):
        super().__init__(output_field=output_field or FloatField())
        self.value = float(value)

    def as_sql(self, compiler, connection):
        return repr(self.value), []

    def get_group_by_cols(self):
        return []   # a constant: never grouped by (PostgreSQL refuses "GROUP BY 0.0")


def capacity_sql(prefix=''):
    """capacity, as SQL."""
    return models.ExpressionWrapper(
        (F(f'{prefix}total') - F(f'{prefix}reserved')) * F(f'{prefix}allocation_ratio'),
        output_field=FloatField())


def free_sql(capacity, used):
    """free, as SQL over two expressions (an inventory's, or sums); NULL
    stays NULL (no inventory of the class), as GREATEST would not on
    PostgreSQL."""
    room = models.ExpressionWrapper(capacity - used, output_field=FloatField())
    return Case(When(LessThan(room, Value(0.0)), then=Value(0.0)), default=room,
                output_field=FloatField())


def utilization_sql(used, capacity):
    """utilization, as SQL over two expressions: NULL without capacity.
    The 0 is written into the text, so SQLite matches the inventories'
    expression index (InventoryQuerySet.with_utilization)."""
    return Cast(used, FloatField()) / NullIf(capacity, SQLConstant(0))


def in_pool_sql(member_ids, prefix=''):
    """In the pool, as SQL: a condition on providers (reached through
    `prefix`), given the ids of the pool aggregate's members (a list or a
    subquery)."""
    return Q(**{f'{prefix}id__in': member_ids}) | Q(**{f'{prefix}root_provider_id__in': member_ids})


def takes_sql(amount):
    """takes, as SQL (a condition)."""
    return (Q(min_unit__lte=amount, max_unit__gte=amount)
            & Exact(Mod(Value(amount), F('step_size')), 0))


def fits_sql(amount):
    """fits, as SQL (a condition)."""
    return takes_sql(amount) & GreaterThanOrEqual(capacity_sql(), F('used') + amount)


def slots_sql(amount):
    """slots, as SQL: the quotient floored, then moved by one where the
    division rounded across a whole number, as slots does."""
    limit = capacity_sql()
    room = models.ExpressionWrapper((limit - F('used')) / Value(float(amount)),
                                    output_field=FloatField())
    k = Floor(room)
    corrected = Case(
        When(GreaterThanOrEqual(room, Value(float(EXACT_SLOTS))), then=k),
        When(GreaterThan(F('used') + k * Value(amount), limit), then=k - Value(1)),
        When(LessThanOrEqual(F('used') + (k + Value(1)) * Value(amount), limit),
             then=k + Value(1)),
        default=k, output_field=FloatField())
    return Case(When(takes_sql(amount) & GreaterThanOrEqual(room, Value(1.0)), then=corrected),
                default=Value(0.0), output_field=FloatField())
